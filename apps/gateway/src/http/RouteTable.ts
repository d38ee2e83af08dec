/**
 * The routes the server answers, for telling a wrong method (405) from an unknown path (404).
 */
import * as HttpApi from "@effect/platform/HttpApi"

export interface RouteTable {
  /** Methods served on this path; empty when the path is unknown. */
  readonly methodsFor: (path: string) => ReadonlyArray<string>
  /**
   * The methods of the path when it is a fixed one (no parameter) that does not have `method`,
   * which the router would otherwise hand to a route of that method with a parameter in its
   * place: `GET /messages/send` to `GET /messages/{id}`. Undefined when the router's choice is
   * right.
   */
  readonly refused: (method: string, path: string) => ReadonlyArray<string> | undefined
}

const toRegExp = (path: string) =>
  new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:(\w+)\\\?/g, "[^/]*").replace(/:(\w+)/g, "[^/]+")}/?$`)

/** The path without its trailing slash, which the router ignores. */
const trimmed = (path: string) => (path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path)

export const make = (
  apis: ReadonlyArray<HttpApi.HttpApi.Any>,
  extra: ReadonlyArray<readonly [method: string, path: string]> = []
): RouteTable => {
  const routes: Array<{ readonly method: string; readonly pattern: RegExp }> = []
  // Paths without a parameter, looked up as they are: `refused` is asked on every request.
  const fixed = new Map<string, Array<string>>()
  const add = (method: string, path: string) => {
    routes.push({ method, pattern: toRegExp(path) })
    if (path.includes(":")) return
    const methods = fixed.get(trimmed(path)) ?? []
    if (!methods.includes(method)) methods.push(method)
    fixed.set(trimmed(path), methods)
  }
  for (const api of apis) {
    HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
      onGroup() {},
      onEndpoint({ endpoint }) {
        add(endpoint.method, endpoint.path)
      }
    })
  }
  for (const [method, path] of extra) add(method, path)
  return {
    methodsFor: (path) =>
      fixed.get(trimmed(path)) ?? [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))],
    refused: (method, path) => {
      const methods = fixed.get(trimmed(path))
      // The router answers HEAD with the GET route.
      const served = methods === undefined || methods.includes(method) || (method === "HEAD" && methods.includes("GET"))
      return served ? undefined : methods
    }
  }
}
