/**
 * The TypeScript sources of the product (`packages/<name>/src` and `apps/<name>/src`), for the tests that
 * check the code itself on its syntax tree.
 */
import { readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))

const isDirectory = (path: string) => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

const tsFiles = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (name === "node_modules") return []
    if (statSync(path).isDirectory()) return tsFiles(path)
    return name.endsWith(".ts") ? [path] : []
  })

/** Every `.ts` file below `packages/<name>/src` and `apps/<name>/src`. */
export const productSources = (): Array<string> =>
  ["packages", "apps"]
    .flatMap((top) => readdirSync(join(ROOT, top)).map((name) => join(ROOT, top, name, "src")))
    .filter(isDirectory)
    .flatMap(tsFiles)
