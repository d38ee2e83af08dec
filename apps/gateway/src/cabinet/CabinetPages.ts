/**
 * Serves the cabinet's pages under /cabinet and its assets (the script and styles read once from
 * apps/cabinet at start, the words of each language made from its dictionary; each linked with
 * its content hash, cached for a year, and sent gzipped, compressed once at start, to a browser
 * that accepts it). `/` and `/cabinet` lead to the
 * balance page; a page not signed in sends the browser to the login page by itself.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { LANGS, negotiate } from "@wagate/cabinet/I18n"
import { BASE, dictionaryScript, PAGES, render } from "@wagate/cabinet/Pages"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { gzipSync } from "node:zlib"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import type { GatewaySettings } from "../Config.js"
import { Settings } from "../Config.js"
import { CSRF_COOKIE, httpsOf, secret, withCsrfCookie } from "./CabinetAuth.js"

const assetsDir = join(dirname(createRequire(import.meta.url).resolve("@wagate/cabinet/package.json")), "assets")
const hashOf = (body: Uint8Array | string) => createHash("sha256").update(body).digest("hex").slice(0, 12)
const asset = (body: Buffer, contentType: string) => ({ body, gzipped: gzipSync(body, { level: 9 }), contentType, hash: hashOf(body) })
const JS = "text/javascript; charset=utf-8"
const ASSETS: Record<string, ReturnType<typeof asset>> = {
  "cabinet.css": asset(readFileSync(join(assetsDir, "cabinet.css")), "text/css; charset=utf-8"),
  "cabinet.js": asset(readFileSync(join(assetsDir, "cabinet.js")), JS),
  ...Object.fromEntries(LANGS.map((lang) => [`i18n-${lang}.js`, asset(Buffer.from(dictionaryScript(lang)), JS)]))
}
const VERSION = hashOf(ASSETS["cabinet.css"].hash + ASSETS["cabinet.js"].hash)
const WORDS_VERSION = hashOf(LANGS.map((lang) => ASSETS[`i18n-${lang}.js`].hash).join())

export const LANG_COOKIE = "wagate_lang"

/** Nothing but the cabinet's own files runs or loads on its pages; no other site may frame them. */
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; " +
  "frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"

const page = (def: (typeof PAGES)[number], settings: GatewaySettings) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const url = new URL(request.url, "http://x")
    const chosen = url.searchParams.get("lang") ?? request.cookies[LANG_COOKIE]
    const lang = negotiate(chosen ?? undefined, request.headers["accept-language"])
    // The CSRF token of calls made before signing in; kept while the browser has one.
    const csrf = request.cookies[CSRF_COOKIE] ?? secret()
    const secure = httpsOf(settings, request)
    let response = HttpServerResponse.text(render(def, { lang, csrf, version: VERSION, wordsVersion: WORDS_VERSION }), {
      contentType: "text/html; charset=utf-8",
      headers: {
        "cache-control": "no-store",
        "content-security-policy": CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "vary": "Accept-Language, Cookie"
      }
    })
    if (request.cookies[CSRF_COOKIE] === undefined) response = withCsrfCookie(response, csrf, secure)
    if (url.searchParams.has("lang") && (chosen === "en" || chosen === "ru")) {
      response = HttpServerResponse.unsafeSetCookie(response, LANG_COOKIE, chosen, {
        path: BASE,
        sameSite: "lax",
        secure,
        maxAge: "365 days"
      })
    }
    return response
  })

/** `Accept-Encoding` names gzip (or `*`) without refusing it by `q=0`. */
const acceptsGzip = (header: string | undefined) =>
  header !== undefined && header.split(",").some((part) => {
    const [coding, ...params] = part.split(";").map((p) => p.trim().toLowerCase())
    return (coding === "gzip" || coding === "*") && !params.some((p) => /^q=0(\.0*)?$/.test(p))
  })

const toCabinet = Effect.succeed(HttpServerResponse.redirect(`${BASE}/balance`, { status: 302 }))

export const CabinetPages = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const settings = yield* Settings
    for (const def of PAGES) {
      const path: `/${string}` = `${BASE}${def.path}`
      yield* router.get(path, page(def, settings))
    }
    yield* router.get("/", toCabinet)
    yield* router.get(BASE, toCabinet)
    for (const [name, file] of Object.entries(ASSETS)) {
      const path: `/${string}` = `${BASE}/assets/${name}`
      yield* router.get(path, Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        const gzip = acceptsGzip(request.headers["accept-encoding"])
        return HttpServerResponse.uint8Array(gzip ? file.gzipped : file.body, {
          contentType: file.contentType,
          headers: {
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff",
            vary: "accept-encoding",
            ...(gzip ? { "content-encoding": "gzip" } : {})
          }
        })
      }))
    }
  })
)

/** The page paths, for the route table (405 instead of 404 on a wrong method). */
export const PAGE_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ...PAGES.map((p) => ["GET", `${BASE}${p.path}`] as const),
  ["GET", "/"],
  ["GET", BASE],
  ...Object.keys(ASSETS).map((name) => ["GET", `${BASE}/assets/${name}`] as const)
]
