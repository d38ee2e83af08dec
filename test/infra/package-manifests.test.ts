/**
 * Every workspace's package.json tells what it needs: each package its sources import is among
 * its dependencies, each `@wagate/*` package it declares is one it imports, and each path its
 * `exports` names exists.
 */
import { assert, describe, it } from "@effect/vitest"
import { builtinModules } from "node:module"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

interface Manifest {
  readonly name: string
  readonly exports?: Record<string, string>
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

const workspaces = ["packages", "apps"].flatMap((top) =>
  readdirSync(join(ROOT, top)).map((name) => join(ROOT, top, name)).filter((dir) => existsSync(join(dir, "package.json")))
)

const sources = (dir: string): Array<string> =>
  !existsSync(dir) ? [] : readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (name === "node_modules") return []
    if (statSync(path).isDirectory()) return sources(path)
    return name.endsWith(".ts") ? [path] : []
  })

/** The packages a file imports (static, dynamic and type-only imports, and re-exports). */
const importsOf = (file: string): Array<string> => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const specifiers: Array<string> = []
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      specifiers.push(node.arguments[0].text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return specifiers
    .filter((s) => !s.startsWith(".") && !s.startsWith("node:") && !builtinModules.includes(s.split("/")[0]))
    .map((s) => (s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0]))
}

describe("package manifests", () => {
  for (const dir of workspaces) {
    const manifest: Manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
    it(`${manifest.name}: declares what its sources import, imports the workspace packages it declares, exports what exists`, () => {
      const imported = new Set(sources(join(dir, "src")).flatMap(importsOf))
      imported.delete(manifest.name)
      const declared = new Set(Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }))
      assert.deepStrictEqual([...imported].filter((name) => !declared.has(name)).sort(), [], "imported but not declared")
      assert.deepStrictEqual(
        [...declared].filter((name) => name.startsWith("@wagate/") && !imported.has(name)).sort(),
        [],
        "declared but never imported"
      )
      const missing = Object.values(manifest.exports ?? {})
        .filter((target) => !target.includes("*") && !existsSync(join(dir, target)))
      assert.deepStrictEqual(missing, [], "exported but missing")
    })
  }
})
