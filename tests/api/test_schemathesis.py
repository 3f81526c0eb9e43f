"""Property-based API checks against ``/openapi.json`` (schemathesis): no 5xx, and every response
(status code, content type, headers, body) conforms to the schema. Bounded: a few examples per operation,
generation phase only, against an app with an organization, a dataset, a job and a drafter version."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hsettings
from schemathesis import checks

from tests.api.conftest import job_body, register_version, upload

CHECKS = [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
          checks.response_schema_conformance, checks.response_headers_conformance]


def test_api_conforms_to_its_schema(app, client, org_a, tmp_path):
    from hypothesis import given
    from hypothesis import strategies as st
    from schemathesis import GenerationMode

    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    register_version(app, org_a, tmp_path, "smol-agent", None)
    known = {"dataset_id": ds["id"], "job_id": job["id"], "name": "smol-agent", "version": 1, "alias": "champion",
             "path": "model.safetensors"}
    auth = org_a.h(admin=True)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) == 23  # every method of every path
    failures = []
    for op in operations:

        # Random inputs (valid and invalid), and valid inputs aimed at existing resources.
        names = [p.name for p in op.path_parameters]
        strategies = [op.as_strategy(), op.as_strategy(generation_mode=GenerationMode.NEGATIVE)]
        if names:
            strategies.append(op.as_strategy(path_parameters={n: known[n] for n in names}))

        @given(case=st.one_of(strategies))
        @hsettings(max_examples=30, deadline=None, phases=[Phase.generate], derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))
        def run(case):
            case.call_and_validate(headers=dict(auth), checks=CHECKS)

        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect every operation's failure, then report
            failures.append(f"{op.label}: {exc}")
    assert not failures, "\n\n".join(failures)
