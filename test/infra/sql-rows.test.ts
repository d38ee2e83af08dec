/**
 * SQL rows in packages/* and apps/* sources are decoded through a schema (`SqlSchema`, or
 * `Rows.decoded` in the store), not typed away: no `sql<any>` (nor `any` anywhere in the row type
 * of a statement, such as `sql<Record<string, any>>`), no parameter typed `any` (the
 * `(r: any) => ...` row mapper that goes with an untyped statement), and outside the migrations
 * (frozen once released) no row type asserted on a statement at all (`sql<{ id: string }>`).
 * Checked on the syntax tree, so comments and strings do not count.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"
import { productSources, ROOT } from "../support/SourceFiles.js"

const mentionsAny = (node: ts.Node): boolean =>
  node.kind === ts.SyntaxKind.AnyKeyword || (ts.forEachChild(node, (child) => mentionsAny(child) || undefined) ?? false)

/** Untyped rows in a file's source: statements with `any` in their row type, parameters typed `any`. */
const untypedRows = (file: string, text: string): Array<string> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Array<string> = []
  const report = (node: ts.Node) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart())
    found.push(`${relative(ROOT, file)}:${line + 1}: ${node.getText().split("\n")[0].slice(0, 80)}`)
  }
  const visit = (node: ts.Node) => {
    // sql<any>`...`, sql<Record<string, any>>`...`, and sql.unsafe<any>(...) alike.
    if ((ts.isTaggedTemplateExpression(node) || ts.isCallExpression(node)) && node.typeArguments?.some(mentionsAny)) {
      report(node)
    }
    if (ts.isParameter(node) && node.type?.kind === ts.SyntaxKind.AnyKeyword) report(node)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Statements with a row type asserted (`sql<{ id: string }>\`...\``) in a file's source. */
const assertedRows = (file: string, text: string): Array<string> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Array<string> = []
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node) && node.typeArguments !== undefined && node.tag.getText() === "sql") {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart())
      found.push(`${relative(ROOT, file)}:${line + 1}: ${node.getText().split("\n")[0].slice(0, 80)}`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe("SQL rows", () => {
  it("the check finds what it looks for", () => {
    const found = untypedRows(
      join(ROOT, "example.ts"),
      [
        "const a = yield* sql<any>`SELECT 1`",
        "const b = yield* sql<Record<keyof Policy, any>>`SELECT 1`",
        "const c = sql.unsafe<any>(\"SELECT 1\")",
        "const toRow = (r: any) => r.id",
        "const d = yield* sql<{ id: string }>`SELECT 1` // sql<any> in a comment",
        "const e = \"sql<any>`SELECT`\""
      ].join("\n")
    )
    assert.deepStrictEqual(found.map((f) => f.split(":")[1]), ["1", "2", "3", "4"])
  })

  it("no `sql<any>` and no parameter typed `any` in packages/*/src and apps/*/src", () => {
    const files = productSources()
    assert.isAbove(files.length, 100)
    assert.deepStrictEqual(files.flatMap((file) => untypedRows(file, readFileSync(file, "utf8"))), [])
  })

  it("no row type asserted on a statement outside the migrations: rows are decoded", () => {
    assert.deepStrictEqual(assertedRows(join(ROOT, "example.ts"), "const a = yield* sql<{ id: string }>`SELECT 1`").length, 1)
    const files = productSources().filter((file) => !file.includes("/migrations/"))
    assert.deepStrictEqual(files.flatMap((file) => assertedRows(file, readFileSync(file, "utf8"))), [])
  })
})
