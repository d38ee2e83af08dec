/**
 * What the generated OpenAPI document needs beyond the schemas: the rate-limit and Retry-After
 * response headers, the CSV download of GET /export, and the document-wide cleanup.
 *
 * @since 1.0.0
 */
import * as OpenApi from "@effect/platform/OpenApi"

type Json = Record<string, any>
type Operation = Json & { responses: Json }

const integerHeader = (description: string) => ({ description, schema: { type: "integer" } })

const rateLimitHeaders = (what: string) => ({
  "X-RateLimit-Limit": integerHeader(`Daily ${what} limit of the number, trust-index multiplier included`),
  "X-RateLimit-Remaining": integerHeader(`${what} still allowed today`),
  "X-RateLimit-Reset": integerHeader("Unix time (seconds) of the next midnight in Almaty (UTC+5)")
})

const retryAfter = { "Retry-After": integerHeader("Seconds after which the request may succeed") }

const addHeaders = (op: Json, statuses: ReadonlyArray<string>, headers: Json): Operation => {
  const responses = { ...op.responses }
  for (const status of statuses) {
    if (responses[status]) responses[status] = { ...responses[status], headers: { ...responses[status].headers, ...headers } }
  }
  return { ...op, responses }
}

/** The `X-RateLimit-*` headers on 200 and 429 of an endpoint that counts `what`. @since 1.0.0 */
export const withRateLimitHeaders = (what: string) =>
  OpenApi.annotations({ transform: (op) => addHeaders(op, ["200", "429"], rateLimitHeaders(what)) })

/** The contact check: limit headers, and Retry-After on 503 too. @since 1.0.0 */
export const withCheckHeaders = OpenApi.annotations({
  transform: (op) => addHeaders(addHeaders(op, ["200", "429"], rateLimitHeaders("check")), ["503"], retryAfter)
})

/** GET /export answers CSV as well as JSON. @since 1.0.0 */
export const withCsvDownload = OpenApi.annotations({
  transform: (op) => {
    const ok = op.responses["200"]
    return {
      ...op,
      responses: {
        ...op.responses,
        "200": {
          ...ok,
          description: "The history file (format=csv: text/csv; format=json: application/json)",
          content: { ...ok?.content, "text/csv": { schema: { type: "string" } } }
        }
      }
    }
  }
})

/**
 * The document-wide cleanup: decode failures never leave the server in their raw form (the
 * gateway answers invalid_param / invalid_from / invalid_json instead), every 429 carries
 * Retry-After, and every operation has a description.
 *
 * @since 1.0.0
 */
export const documentTransform = (spec: Json): Json => {
  const paths: Record<string, Record<string, Operation>> = {}
  for (const [path, item] of Object.entries<Record<string, Operation>>(spec.paths)) {
    paths[path] = {}
    for (const [method, op] of Object.entries(item)) {
      const described = { ...op, description: op.description ?? op.summary }
      paths[path][method] = addHeaders(stripDecodeError(described), ["429"], retryAfter)
    }
  }
  const { HttpApiDecodeError: _, Issue: __, PropertyKey: ___, ...schemas } = spec.components.schemas
  return {
    ...spec,
    info: { ...spec.info, contact: { name: "The operator of this gateway" } },
    servers: [{ url: "/", description: "This gateway" }],
    paths,
    components: { ...spec.components, schemas }
  }
}

const isDecodeError = (s: Json | undefined) => s?.$ref === "#/components/schemas/HttpApiDecodeError"

const stripDecodeError = (op: Operation): Operation => {
  const bad = op.responses["400"]
  const schema = bad?.content?.["application/json"]?.schema
  if (!schema) return op
  if (isDecodeError(schema)) {
    const { "400": _, ...responses } = op.responses
    return { ...op, responses }
  }
  if (Array.isArray(schema.anyOf)) {
    const anyOf = schema.anyOf.filter((s: Json) => !isDecodeError(s))
    const content = { "application/json": { schema: anyOf.length === 1 ? anyOf[0] : { ...schema, anyOf } } }
    return { ...op, responses: { ...op.responses, "400": { ...bad, content } } }
  }
  return op
}
