/**
 * The routes the server answers, for telling a wrong method (405) from an unknown path (404).
 */
import * as HttpApi from "@effect/platform/HttpApi"

export interface RouteTable {
  /** Methods served on this path; empty when the path is unknown. */
  readonly methodsFor: (path: string) => ReadonlyArray<string>
}

const toRegExp = (path: string) =>
  new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:(\w+)\\\?/g, "[^/]*").replace(/:(\w+)/g, "[^/]+")}/?$`)

export const make = (
  apis: ReadonlyArray<HttpApi.HttpApi.Any>,
  extra: ReadonlyArray<readonly [method: string, path: string]> = []
): RouteTable => {
  const routes: Array<{ readonly method: string; readonly pattern: RegExp }> = []
  for (const api of apis) {
    HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
      onGroup() {},
      onEndpoint({ endpoint }) {
        routes.push({ method: endpoint.method, pattern: toRegExp(endpoint.path) })
      }
    })
  }
  for (const [method, path] of extra) routes.push({ method, pattern: toRegExp(path) })
  return {
    methodsFor: (path) => [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
  }
}
