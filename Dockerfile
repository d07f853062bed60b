# The gateway runs its TypeScript sources directly on Node 24 (type stripping); only the web
# console is built, in a stage of its own, and its files copied into the image.
FROM node:24-slim AS console
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY console ./console
RUN npm run build:console

FROM node:24-slim

WORKDIR /app
ENV NODE_ENV=production

COPY package.json package-lock.json .npmrc ./
# Dev dependencies (the pinned `node` binary, TypeScript, test and build tools) are not needed in the
# image; nor is `prepare` (it builds the console, copied below).
# ONNX Runtime (which runs the local embedding model) ships binaries for every platform: keep Linux's.
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force \
  && rm -rf node_modules/onnxruntime-node/bin/napi-v6/darwin node_modules/onnxruntime-node/bin/napi-v6/win32

COPY src ./src
COPY bin ./bin
# `pmg` on the PATH, for `kubectl exec` and `docker exec`.
RUN ln -s /app/bin/profile-memory-gateway.js /usr/local/bin/pmg
COPY plugins ./plugins
COPY --from=console /build/console/dist ./console/dist

# DATA_DIR only matters when DATABASE_URL is unset (embedded PostgreSQL); keep it on a volume.
ENV PORT=3100 \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    LOG_FORMAT=json
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node

EXPOSE 3100
# Ready = the database answers (while it does not, completions still flow, without memory).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3100) + '/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"

# SIGTERM drains in-flight requests (SHUTDOWN_DRAIN_MS, 15 s) and the worker (10 s); the process
# exits within 40 s whatever hangs: give it that long before a SIGKILL (docker stop -t 45).
STOPSIGNAL SIGTERM
# The command line is the entry point: `start` by default, and the same image runs the other commands
# (`docker run … doctor`, `kubectl exec deploy/profile-memory-gateway -- pmg jobs list`).
ENTRYPOINT ["node", "src/cli/main.ts"]
CMD ["start"]
