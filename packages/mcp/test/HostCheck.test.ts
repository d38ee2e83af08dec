import { assert, describe, it } from "@effect/vitest"
import * as HostCheck from "../src/HostCheck.js"

describe("HostCheck", () => {
  const local = HostCheck.LOCAL_HOSTS
  it("allows loopback names with any port, and the same names as an Origin", () => {
    for (const host of ["localhost", "localhost:3000", "127.0.0.1:8080", "[::1]", "[::1]:3000", "LOCALHOST:1"]) {
      assert.isUndefined(HostCheck.refusal({ host }, local), host)
      assert.isUndefined(HostCheck.refusal({ host, origin: `http://${host}` }, local), host)
    }
  })

  it("refuses other hosts, a missing Host, and origins of other hosts", () => {
    const table: Array<[Record<string, string>, string]> = [
      [{ host: "evil.example.com" }, "host_not_allowed"],
      [{ host: "localhost.evil.example.com" }, "host_not_allowed"],
      [{}, "host_not_allowed"],
      [{ host: "localhost", origin: "http://evil.example.com" }, "origin_not_allowed"],
      [{ host: "localhost", origin: "null" }, "origin_not_allowed"],
      [{ host: "127.0.0.1", origin: "https://127.0.0.1.evil.example.com" }, "origin_not_allowed"]
    ]
    for (const [headers, code] of table) assert.strictEqual(HostCheck.refusal(headers, local)?.code, code, JSON.stringify(headers))
  })

  it("a configured name replaces the defaults; * allows any host", () => {
    assert.isUndefined(HostCheck.refusal({ host: "wa.example.com:443", origin: "https://wa.example.com" }, ["wa.example.com"]))
    assert.strictEqual(HostCheck.refusal({ host: "localhost" }, ["wa.example.com"])?.code, "host_not_allowed")
    assert.isUndefined(HostCheck.refusal({ host: "anything", origin: "http://else" }, ["*"]))
  })
})
