/**
 * The modules of this package import each other without a circle (type imports and dynamic
 * imports included): the port's types live in BlobPort, the implementations depend on it, and
 * only the tag's layers reach the implementations.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

const SRC = join(import.meta.dirname, "../src")

const graph = (): Map<string, Array<string>> => {
  const edges = new Map<string, Array<string>>()
  for (const file of readdirSync(SRC, { recursive: true }) as Array<string>) {
    if (!file.endsWith(".ts")) continue
    const text = readFileSync(join(SRC, file), "utf8")
    const targets = [...text.matchAll(/(?:from|import\()\s*"(\.{1,2}\/[^"]+)\.js"/g)].map((m) =>
      join(file, "..", m[1]!).replace(/\\/g, "/") + ".ts"
    )
    edges.set(file.replace(/\\/g, "/"), targets)
  }
  return edges
}

describe("packages/media imports", () => {
  it("form no circle", () => {
    const edges = graph()
    const circles: Array<string> = []
    const state = new Map<string, "visiting" | "done">()
    const visit = (node: string, path: Array<string>) => {
      if (state.get(node) === "done") return
      if (state.get(node) === "visiting") {
        circles.push([...path.slice(path.indexOf(node)), node].join(" -> "))
        return
      }
      state.set(node, "visiting")
      for (const next of edges.get(node) ?? []) visit(next, [...path, node])
      state.set(node, "done")
    }
    // index.ts re-exports everything and is imported by nothing here.
    for (const node of edges.keys()) visit(node, [])
    assert.deepStrictEqual(circles, [])
  })
})
