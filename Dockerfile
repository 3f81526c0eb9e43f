# tracedraft: one image for the API, the CLI and the stage workers (entrypoint `tracedraft`).
#
# CPU image (default):
#   docker build -t tracedraft:cpu .
# CUDA image (GPU workers): a CUDA runtime base and PyTorch's CUDA wheel index, same file:
#   docker build -t tracedraft:cuda \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu22.04 \
#     --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
#
# The container runs the same commands the tests drive: `tracedraft db upgrade`, `tracedraft serve`,
# `tracedraft worker --queue cpu|gpu`, as the non-root user `tracedraft` (uid 10001), with every setting
# from TRACEDRAFT_* environment variables (README, "Environment variables").
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG TORCH_VERSION=2.13.0
# Extra pip extras of the project, e.g. "[sglang]" for a GPU image that launches SGLang itself.
ARG EXTRAS=""

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    TRACEDRAFT_HOME=/data

# CUDA base images are plain Ubuntu: give them Python 3.11 (python:3.11-slim already has it).
RUN if ! command -v python3.11 >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3.11 python3.11-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3.11 -m venv /opt/venv

# PyTorch first, from the index that matches the base image (CPU or a CUDA version); the project's own
# pin (torch==2.13.0) is then already satisfied.
RUN pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"

WORKDIR /app
COPY pyproject.toml README.md ./
COPY drafters ./drafters
COPY service ./service
COPY workers ./workers
COPY migrations ./migrations
RUN pip install ".${EXTRAS}" && tracedraft --help >/dev/null

RUN useradd --uid 10001 --user-group --create-home --home-dir /home/tracedraft tracedraft \
    && mkdir -p /data \
    && chown tracedraft:tracedraft /data
USER tracedraft
VOLUME ["/data"]
EXPOSE 8000

ENTRYPOINT ["tracedraft"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
