# One image for both binaries: the manager (entrypoint) and the sidecar, which the
# manager injects with the same image and the command `turnwatch-sidecar run`.
# Both are small static Go binaries; one image means one build, one pull per node,
# and a sidecar that always matches its controller's version.

# Build stage: the same script builds the local e2e and demo images (hack/image.sh).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY pkg/ pkg/
COPY sidecar/ sidecar/
COPY hack/build-static.sh hack/
RUN hack/build-static.sh /out

# Run stage: nothing but the binaries, as a non-root user.
FROM scratch
# kubectl-turnwatch rides along: `kubectl cp` or `docker create` + `docker cp` gets
# the plugin matching the cluster's manager.
COPY --from=build /out/manager /out/turnwatch-sidecar /out/kubectl-turnwatch /out/turnwatch-hook /usr/local/bin/
ENV PATH=/usr/local/bin
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/manager"]
