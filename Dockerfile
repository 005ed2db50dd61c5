# rollbench: one image for the API, the workers, the scheduler and migrations.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 ROLLBENCH_DATA_DIR=/data
COPY pyproject.toml README.md alembic.ini ./
COPY orchestrator ./orchestrator
COPY api ./api
COPY workers ./workers
COPY migrations ./migrations
COPY configs ./configs
RUN pip install -e . && useradd --create-home rollbench && mkdir -p /data \
    && chown rollbench /data
USER rollbench
EXPOSE 8080
CMD ["rollbench", "api", "--host", "0.0.0.0", "--port", "8080"]
