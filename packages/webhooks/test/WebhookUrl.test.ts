/**
 * Webhook URLs: http(s) only, no credentials, and public addresses only unless the operator
 * allows private ones; names are judged by every address they resolve to.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as WebhookUrl from "../src/WebhookUrl.js"

const dns: Record<string, ReadonlyArray<string>> = {
  "hooks.example.com": ["93.184.216.34"],
  "split.example.com": ["93.184.216.34", "10.0.0.7"],
  "inside.example.com": ["192.168.1.20"],
  "localhost": ["127.0.0.1"],
  "api.localhost": ["127.0.0.1"]
}
const resolve: WebhookUrl.Resolve = (host) =>
  host in dns ? Effect.succeed(dns[host]!) : Effect.fail(new Error("ENOTFOUND"))

const outcome = (url: string, allowPrivate = false) =>
  WebhookUrl.check(url, { allowPrivate, resolve }).pipe(
    Effect.match({ onFailure: (e) => `${e.code}: ${e.error}`, onSuccess: (href) => href })
  )

describe("WebhookUrl", () => {
  it.effect("accepts public http(s) URLs, normalised", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* outcome("https://hooks.example.com/wagate?x=1"), "https://hooks.example.com/wagate?x=1")
      assert.strictEqual(yield* outcome(" HTTP://Hooks.Example.com:8080/in "), "http://hooks.example.com:8080/in")
      assert.strictEqual(yield* outcome("https://93.184.216.34/hook"), "https://93.184.216.34/hook")
    }))

  it.effect("refuses other shapes with invalid_param", () =>
    Effect.gen(function*() {
      for (
        const url of [
          "",
          "hooks.example.com/x",
          "ftp://hooks.example.com/",
          "javascript:alert(1)",
          "https://user:pw@hooks.example.com/",
          `https://hooks.example.com/${"a".repeat(2100)}`,
          "https://hooks.example.com:0/x",
          "https://hooks.example.com/x#y",
          "https://hooks.example.com/x#"
        ]
      ) {
        assert.match(yield* outcome(url), /^invalid_param: url /, url)
      }
      assert.match(yield* outcome("https://nowhere.example.com/"), /^invalid_param: nowhere.example.com could not be resolved/)
    }))

  it.effect("refuses loopback, private, link-local and names pointing inside, unless allowed", () =>
    Effect.gen(function*() {
      const inside = [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://api.localhost/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://172.16.0.1/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "https://inside.example.com/hook",
        "https://split.example.com/hook"
      ]
      for (const url of inside) {
        assert.match(yield* outcome(url), /^invalid_param: .* private or local address/, url)
        assert.notMatch(yield* outcome(url, true), /^invalid_param/, url)
      }
    }))
})
