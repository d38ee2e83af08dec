/**
 * Module hooks (registered by `typescript.mjs`): the project's own TypeScript files, compiled
 * by esbuild with the root tsconfig's settings and an inline source map, without `keepNames`,
 * and printed a statement a line (tsx squeezes a file onto one line), so that CPU and heap
 * profiles, which do not read source maps, tell the functions of a file apart by line.
 * Everything else (node_modules, JSON, resolution) goes on to tsx's hooks.
 */
import { transform } from "esbuild"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"

const root = new URL("../", import.meta.url)
const tsconfig = JSON.parse(await readFile(new URL("tsconfig.json", root), "utf8"))
const options = {
  loader: "ts",
  format: "esm",
  target: `node${process.versions.node}`,
  sourcemap: "inline",
  tsconfigRaw: { compilerOptions: tsconfig.compilerOptions }
}

/** A TypeScript source of this repository, not of a dependency. */
const ours = (url) => {
  if (!url.startsWith(root.href) || url.includes("/node_modules/")) return false
  const { pathname } = new URL(url)
  return pathname.endsWith(".ts") || pathname.endsWith(".mts")
}

export async function load(url, context, nextLoad) {
  if (!ours(url)) return nextLoad(url, context)
  const path = fileURLToPath(url)
  const { code } = await transform(await readFile(path, "utf8"), { ...options, sourcefile: path })
  return { format: "module", source: code, shortCircuit: true }
}
