/**
 * The sources of packages/* and apps/* hold no `as any` and no `as unknown as`: a cast that
 * switches type checking off hides the very mistakes the types are there to catch. (Tests may
 * keep what they truly need.) Checked on the syntax tree, so comments and strings do not count.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { relative } from "node:path"
import ts from "typescript"
import { productSources, ROOT } from "../support/SourceFiles.js"

const casts = (file: string): Array<string> => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const found: Array<string> = []
  const visit = (node: ts.Node) => {
    if (ts.isAsExpression(node)) {
      const escapes = node.type.kind === ts.SyntaxKind.AnyKeyword ||
        (ts.isAsExpression(node.expression) && node.expression.type.kind === ts.SyntaxKind.UnknownKeyword)
      if (escapes) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart())
        found.push(`${relative(ROOT, file)}:${line + 1}: ${node.getText().slice(0, 80)}`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe("source casts", () => {
  it("no `as any` or `as unknown as` in packages/*/src and apps/*/src", () => {
    const files = productSources()
    assert.isAbove(files.length, 100)
    assert.deepStrictEqual(files.flatMap(casts), [])
  })
})
