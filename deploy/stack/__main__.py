"""scripts/stack: the local stack in one command, with or without an image registry (docs/stack.md).

    scripts/stack up [--registry]     build what is missing, start every service, wait until healthy
    scripts/stack down [-v]           stop it (-v also deletes its volumes: every row, version and artifact)
    scripts/stack build               only build the images (wheels, debootstrap base, images)
    scripts/stack ps | logs SERVICE   state, logs
    scripts/stack compose ARGS...     the compose client on the stack's files, e.g. `compose exec api tracedraft`
    scripts/stack smoke               the end-to-end check of the running stack (deploy/stack/smoke.py)

Exit codes: 0 ok, 1 a StackError (its message names what is missing and the command that fixes it), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from deploy.stack import compose as stackc
from deploy.stack import engine as eng
from deploy.stack import images
from deploy.stack.errors import StackError


def log(msg: str) -> None:
    print(f"stack: {msg}", file=sys.stderr, flush=True)


def make_stack(mode: str) -> stackc.Stack:
    return stackc.Stack(eng.detect(), mode)


def up(stack: stackc.Stack) -> float:
    """Build (local mode), check ports and volumes, `compose up -d`, wait for health; returns seconds."""
    t0 = time.monotonic()
    log(f"engine: {stack.engine.name}, compose: {' '.join(stack.engine.compose)}, project {stack.project}")
    stackc.check_ports(stack)
    if stack.mode == "local":
        images.build_all(stack.engine, log)
        stackc.check_volumes(stack, images.IMAGES[-1].tag)
    if stack.engine.health_pump:
        stackc.start_pump(stack)
        log("health: podman runs no healthchecks without systemd here; the stack's health pump runs them")
    args = ["up", "-d", "--no-build"] if stack.mode == "local" else ["up", "-d", "--build"]
    log(f"compose {' '.join(args)} (deadline {stackc.timeout_s():.0f} s: TRACEDRAFT_STACK_TIMEOUT_S)")
    try:
        stack.compose(*args, timeout=stackc.timeout_s(), quiet=False)
    except StackError as e:
        if e.code == "timeout":
            stackc.wait_healthy(stack, stackc.LONG_RUNNING, 0, log)  # names the service that held it up
        stackc.check_ports(stack)  # a port taken since the first check: say which, and how to move it
        raise
    waited = stackc.wait_healthy(stack, stackc.LONG_RUNNING, stackc.timeout_s(), log)
    port = os.environ.get("TRACEDRAFT_API_PORT", "8000")
    log(f"up in {time.monotonic() - t0:.0f} s (healthy after {waited:.0f} s more): API http://localhost:{port} "
        f"(/docs); first organization: scripts/stack compose exec api tracedraft orgs create acme --admin-key")
    return time.monotonic() - t0


def down(stack: stackc.Stack, volumes: bool) -> None:
    stack.compose("down", *(["-v"] if volumes else []), timeout=stackc.timeout_s(), quiet=False)
    if stack.engine.health_pump:
        stackc.stop_pump(stack)
    log("down" + (" (volumes deleted)" if volumes else "; volumes kept (scripts/stack down -v deletes them)"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/stack", description=__doc__.split("\n\n")[0])
    ap.add_argument("--registry", action="store_true",
                    help="use the official images from their registries instead of building them here")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up")
    d = sub.add_parser("down")
    d.add_argument("-v", "--volumes", action="store_true", help="also delete the stack's volumes (all its data)")
    sub.add_parser("build")
    sub.add_parser("ps")
    lg = sub.add_parser("logs")
    lg.add_argument("service")
    c = sub.add_parser("compose")
    c.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("smoke")
    hp = sub.add_parser("health-pump")
    hp.add_argument("pump_mode", choices=("local", "registry"))
    args = ap.parse_args(argv)
    mode = "registry" if args.registry else "local"
    try:
        if args.cmd == "health-pump":
            stackc.pump(make_stack(args.pump_mode))
        elif args.cmd == "build":
            images.build_all(eng.detect(), log)
        elif args.cmd == "smoke":
            from deploy.stack import smoke

            return smoke.main(make_stack(mode), up, down)
        else:
            stack = make_stack(mode)
            if args.cmd == "up":
                up(stack)
            elif args.cmd == "down":
                down(stack, args.volumes)
            elif args.cmd == "ps":
                stack.compose("ps", quiet=False)
            elif args.cmd == "logs":
                stack.compose("logs", "--no-color", "--tail", "200", args.service, quiet=False)
            else:
                return stack.compose(*args.args, timeout=stackc.timeout_s(), quiet=False, check=False).returncode
    except StackError as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stack: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
