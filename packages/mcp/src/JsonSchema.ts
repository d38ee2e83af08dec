/**
 * Output schemas of the tools, derived from the contract's own schemas so the REST answers and
 * the tools' structured content cannot drift apart. MCP wants a plain object schema at the root;
 * references are inlined (these schemas are not recursive) and `$schema` left out, so the
 * default dialect (2020-12) applies and every client's validator accepts them.
 */
import * as JSONSchema from "effect/JSONSchema"
import type * as Schema from "effect/Schema"

export type JsonObjectSchema = { readonly type: "object"; readonly [key: string]: unknown }

const inline = (node: unknown, defs: Record<string, unknown>): unknown => {
  if (Array.isArray(node)) return node.map((n) => inline(n, defs))
  if (typeof node !== "object" || node === null) return node
  const record = node as Record<string, unknown>
  if (typeof record.$ref === "string") {
    const name = record.$ref.replace("#/$defs/", "")
    const { $ref: _, ...rest } = record
    return { ...(inline(defs[name], defs) as object), ...inline(rest, defs) as object }
  }
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(record)) {
    // Effect names integers "int" and gives them a generic description; neither helps a reader.
    if (key === "title" && value === "int") continue
    if (key === "description" && value === "an integer") continue
    out[key] = inline(value, defs)
  }
  return out
}

/** The JSON Schema of `schema`, self-contained, with an object at its root. */
export const objectSchema = <A, I>(schema: Schema.Schema<A, I>): JsonObjectSchema => {
  const { $defs = {}, $schema: _, ...root } = JSONSchema.make(schema, { target: "jsonSchema2020-12" })
  const inlined = inline(root, $defs as Record<string, unknown>) as Record<string, unknown>
  if (inlined.type !== "object") throw new Error("a tool's output schema must describe an object")
  return inlined as JsonObjectSchema
}
