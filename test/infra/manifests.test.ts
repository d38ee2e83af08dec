/**
 * The deployment in infra/: every Kubernetes manifest parses and validates against the
 * Kubernetes schemas (shipped in the `kubernetes-models` package: nothing is downloaded), and
 * says what a deployment of wagate needs (probes, autoscaling, disruption budgets, secrets,
 * non-root); the compose file runs the processes the runbook describes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Secret, Service, ConfigMap } from "kubernetes-models/v1"
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1"
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2"
import { PodDisruptionBudget } from "kubernetes-models/policy/v1"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseAllDocuments, parse } from "yaml"

const INFRA = fileURLToPath(new URL("../../infra/", import.meta.url))

const models: Record<string, new(data: any) => { validate: () => void }> = {
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget
}

const manifests = readdirSync(join(INFRA, "k8s")).filter((f) => f.endsWith(".yaml")).flatMap((file) =>
  parseAllDocuments(readFileSync(join(INFRA, "k8s", file), "utf8")).map((doc) => {
    assert.deepStrictEqual(doc.errors.map(String), [], file)
    return { file, object: doc.toJS() as any }
  })
)

const find = (kind: string, name: string) => {
  const found = manifests.find((m) => m.object.kind === kind && m.object.metadata?.name === name)
  assert.isDefined(found, `${kind} ${name}`)
  return found!.object
}

const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v)

describe("infra/k8s", () => {
  it("every manifest is valid against the Kubernetes schemas", () => {
    assert.isAbove(manifests.length, 5)
    for (const { file, object } of manifests) {
      const Model = models[`${object.apiVersion}/${object.kind}`]
      assert.isDefined(Model, `${file}: no schema for ${object.apiVersion} ${object.kind}`)
      try {
        new Model(object).validate()
      } catch (error) {
        assert.fail(`${file} ${object.kind} ${object.metadata?.name}: ${(error as Error).message}`)
      }
    }
  })

  it("the api Deployment has probes on /api/status, an autoscaler and a disruption budget", () => {
    const api = find("Deployment", "wagate-api")
    const container = api.spec.template.spec.containers[0]
    assert.strictEqual(container.readinessProbe.httpGet.path, "/api/status")
    assert.strictEqual(container.livenessProbe.httpGet.path, "/api/status")
    assert.deepStrictEqual(container.env.find((e: any) => e.name === "WAGATE_ROLE").value, "api")
    const hpa = find("HorizontalPodAutoscaler", "wagate-api")
    assert.deepStrictEqual(hpa.spec.scaleTargetRef, { apiVersion: "apps/v1", kind: "Deployment", name: "wagate-api" })
    assert.isAtLeast(hpa.spec.minReplicas, 2)
    const pdb = find("PodDisruptionBudget", "wagate-api")
    assert.isTrue(matches(pdb.spec.selector.matchLabels, api.spec.template.metadata.labels))
  })

  it("runners are a StatefulSet reached at their pod IP, ready on the runner port, alive by their event loop, one disrupted at a time", () => {
    const runner = find("StatefulSet", "wagate-runner")
    const container = runner.spec.template.spec.containers[0]
    assert.strictEqual(container.env.find((e: any) => e.name === "WAGATE_ROLE").value, "runner")
    assert.strictEqual(
      container.env.find((e: any) => e.name === "RUNNER_HOST").valueFrom.fieldRef.fieldPath,
      "status.podIP"
    )
    assert.strictEqual(container.readinessProbe.tcpSocket.port, "runner")
    // Liveness goes through the event loop, on the metrics port the ConfigMap turns on.
    assert.deepStrictEqual(container.livenessProbe.httpGet, { path: "/livez", port: "metrics" })
    const metricsPort = container.ports.find((p: any) => p.name === "metrics").containerPort
    assert.strictEqual(find("ConfigMap", "wagate").data.METRICS_PORT, String(metricsPort))
    assert.isAtLeast(runner.spec.template.spec.terminationGracePeriodSeconds, 30)
    // A cold start waits for every replica before any takes shards (each number connects once).
    assert.strictEqual(container.env.find((e: any) => e.name === "CLUSTER_MIN_RUNNERS").value, String(runner.spec.replicas))
    const pdb = find("PodDisruptionBudget", "wagate-runner")
    assert.strictEqual(pdb.spec.maxUnavailable, 1)
    assert.isTrue(matches(pdb.spec.selector.matchLabels, runner.spec.template.metadata.labels))
  })

  it("secrets come from the Secret, and every pod runs as non-root", () => {
    const secret = find("Secret", "wagate")
    for (const key of ["OPERATOR_TOKEN", "BLOB_SIGNING_SECRET", "WEBHOOK_SECRET_KEY", "DATABASE_URL", "S3_SECRET_ACCESS_KEY"]) {
      assert.property(secret.stringData, key)
    }
    for (const workload of [find("Deployment", "wagate-api"), find("StatefulSet", "wagate-runner")]) {
      const pod = workload.spec.template.spec
      assert.isTrue(pod.securityContext.runAsNonRoot)
      assert.deepStrictEqual(pod.containers[0].envFrom.map((e: any) => e.secretRef?.name ?? e.configMapRef?.name), [
        "wagate",
        "wagate"
      ])
    }
  })
})

describe("infra/compose.yaml", () => {
  it("runs PostgreSQL, Redis, an S3 store, 2 api and 3 runner processes behind a load balancer", () => {
    const compose = parse(readFileSync(join(INFRA, "compose.yaml"), "utf8"), { merge: true })
    const services = compose.services as Record<string, any>
    const role = (name: string) => services[name].environment?.WAGATE_ROLE
    assert.deepStrictEqual(Object.keys(services).filter((s) => role(s) === "api").sort(), ["api-1", "api-2"])
    assert.deepStrictEqual(Object.keys(services).filter((s) => role(s) === "runner").sort(), [
      "runner-1",
      "runner-2",
      "runner-3"
    ])
    for (const name of ["postgres", "redis", "minio", "lb"]) assert.property(services, name)
    for (const runner of ["runner-1", "runner-2", "runner-3"]) {
      assert.strictEqual(services[runner].environment.RUNNER_HOST, runner)
      assert.strictEqual(services[runner].environment.DATABASE_URL, services["api-1"].environment.DATABASE_URL)
      assert.strictEqual(services[runner].environment.CLUSTER_MIN_RUNNERS, "3")
    }
    const nginx = readFileSync(join(INFRA, "nginx.conf"), "utf8")
    assert.match(nginx, /server api-1:3000/)
    assert.match(nginx, /server api-2:3000/)
  })

  it("the image is multi-stage and runs as a non-root user", () => {
    const dockerfile = readFileSync(join(INFRA, "Dockerfile"), "utf8")
    assert.strictEqual(dockerfile.match(/^FROM /gm)?.length, 2)
    assert.match(dockerfile, /^USER node$/m)
    assert.match(dockerfile, /--omit=dev/)
  })

  it("the image runs node with the flags and the TypeScript loader npm start gives the gateway", () => {
    const dockerfile = readFileSync(join(INFRA, "Dockerfile"), "utf8")
    const start: string = JSON.parse(readFileSync(join(INFRA, "../package.json"), "utf8")).scripts.start
    const node = /^exec node (.*) apps\/gateway\/src\/main\.ts$/.exec(start)
    assert.isNotNull(node)
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)
    assert.isNotNull(entrypoint)
    assert.deepStrictEqual(JSON.parse(entrypoint![1]!), ["node", ...node![1]!.split(" ")])
    assert.include(JSON.parse(entrypoint![1]!), "--expose-gc")
  })
})
