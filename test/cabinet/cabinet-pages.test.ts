/**
 * The cabinet's pages as served: every page answers with its shell under a strict CSP, in the
 * visitor's language (Accept-Language, or the switch, which sticks), and within the page-weight
 * budget of docs/cabinet.md.
 */
import { assert, describe, it } from "@effect/vitest"
import { PAGES } from "@wagate/cabinet/Pages"
import * as Effect from "effect/Effect"
import { freshDatabase, startGateway } from "../support/TestGateway.js"

/**
 * docs/cabinet.md: bytes on the wire of a first visit (the assets gzipped, as a browser accepts
 * them) and of a later page; and the script, styles and words a first visit unpacks.
 */
export const BUDGET = { firstVisit: 20 * 1024, laterPage: 4 * 1024, unpacked: 56 * 1024 }

const fetchText = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const r = await fetch(url, { headers, redirect: "manual" })
    const body = Buffer.from(await r.arrayBuffer())
    return { status: r.status, headers: r.headers, body, text: body.toString("utf8") }
  })

describe("cabinet pages", () => {
  it.scopedLive("every page is served with a strict CSP, in the visitor's language, within the weight budget", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const root = yield* fetchText(`${gateway.url}/`)
      assert.deepStrictEqual([root.status, root.headers.get("location")], [302, "/cabinet/balance"])

      const weights: Array<string> = []
      for (const def of PAGES) {
        for (const lang of ["en", "ru"]) {
          const page = yield* fetchText(`${gateway.url}/cabinet${def.path}`, { "accept-language": lang })
          assert.strictEqual(page.status, 200, def.path)
          assert.match(page.headers.get("content-type")!, /text\/html/)
          assert.match(page.headers.get("content-security-policy")!, /script-src 'self'; /)
          assert.include(page.text, `<html lang="${lang}">`)
          const assets = [...page.text.matchAll(/(?:href|src)="(\/cabinet\/assets\/[^"]+)"/g)].map((m) => m[1])
          assert.strictEqual(assets.length, 3)
          const files = yield* Effect.forEach(assets, (a) => fetchText(`${gateway.url}${a}`, { "accept-encoding": "gzip, br" }))
          for (const f of files) {
            assert.match(f.headers.get("cache-control")!, /immutable/)
            assert.deepStrictEqual([f.headers.get("content-encoding"), f.headers.get("vary")], ["gzip", "accept-encoding"])
          }
          // fetch unpacks the body; Content-Length is what crossed the wire.
          const first = page.body.length + files.reduce((n, f) => n + Number(f.headers.get("content-length")), 0)
          const unpacked = page.body.length + files.reduce((n, f) => n + f.body.length, 0)
          assert.isAtMost(first, BUDGET.firstVisit, `${def.path} (${lang}) first visit: ${first} bytes on the wire`)
          assert.isAtMost(unpacked, BUDGET.unpacked, `${def.path} (${lang}) first visit: ${unpacked} bytes unpacked`)
          assert.isAtMost(page.body.length, BUDGET.laterPage, `${def.path} (${lang}): ${page.body.length} bytes`)
          if (def.path === "/numbers") {
            weights.push(`${lang}: first visit ${first} B on the wire (${unpacked} B unpacked), later pages ${page.body.length} B`)
          }
        }
      }
      console.log(`cabinet page weight, /cabinet/numbers: ${weights.join("; ")}`)

      // Kazakh readers get Russian with a Kazakh welcome; the switch wins over the browser and sticks.
      const kk = yield* fetchText(`${gateway.url}/cabinet/login`, { "accept-language": "kk-KZ,kk;q=0.9" })
      assert.include(kk.text, `<html lang="ru">`)
      const switched = yield* fetchText(`${gateway.url}/cabinet/login?lang=en`, { "accept-language": "ru" })
      assert.include(switched.text, `<html lang="en">`)
      const cookie = switched.headers.getSetCookie().find((c) => c.startsWith("wagate_lang="))!
      const later = yield* fetchText(`${gateway.url}/cabinet/numbers`, { "accept-language": "ru", cookie: cookie.split(";")[0] })
      assert.include(later.text, `<html lang="en">`)
      // A client that takes no gzip gets the same script unpacked.
      const script = later.text.match(/src="(\/cabinet\/assets\/cabinet\.js[^"]*)"/)![1]
      const packed = yield* fetchText(`${gateway.url}${script}`, { "accept-encoding": "gzip" })
      for (const refused of ["identity", "gzip;q=0, deflate"]) {
        const plain = yield* fetchText(`${gateway.url}${script}`, { "accept-encoding": refused })
        assert.isNull(plain.headers.get("content-encoding"), refused)
        assert.strictEqual(Number(plain.headers.get("content-length")), plain.body.length)
        assert.isTrue(plain.body.equals(packed.body), refused)
      }
      // The cabinet's API is not in the public contract.
      const openapi = yield* fetchText(`${gateway.url}/api/v1/openapi.json`)
      assert.notInclude(openapi.text, "/cabinet/")
    }))
})
