/**
 * The address classification every outbound call of the gateway goes through (GuardedHttp):
 * public unicast passes; private, local and special blocks are refused, also when an IPv6 form
 * carries an IPv4 address, and anything that is not a standard address literal is refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { isPrivate } from "../src/PrivateAddress.js"

const CASES: ReadonlyArray<readonly [address: string, refused: boolean]> = [
  ["8.8.8.8", false], ["1.1.1.1", false], ["2606:4700::1111", false], ["::ffff:8.8.8.8", false],
  ["64:ff9b::808:808", false], ["2002:808:808::", false],
  ["127.0.0.1", true], ["10.1.2.3", true], ["172.16.0.1", true], ["192.168.1.1", true], ["100.64.0.1", true],
  ["169.254.169.254", true], ["0.0.0.0", true], ["224.0.0.1", true], ["255.255.255.255", true],
  ["192.0.0.8", true], ["192.0.2.1", true], ["198.18.0.1", true], ["198.51.100.7", true], ["203.0.113.9", true],
  ["::1", true], ["::", true], ["[::1]", true], ["::ffff:127.0.0.1", true], ["[::ffff:7f00:1]", true],
  ["::127.0.0.1", true], ["64:ff9b::7f00:1", true], ["64:ff9b:1::1", true], ["2002:7f00:1::", true],
  ["2002:a9fe:a9fe::", true], ["fe80::1", true], ["fe80::1%eth0", true], ["fc00::1", true], ["fd12::1", true],
  ["ff02::1", true], ["2001::1", true], ["2001:db8::1", true], ["3fff::1", true],
  // Not a standard literal: refused rather than guessed at.
  ["127.1", true], ["0x7f.0.0.1", true], ["2130706433", true], ["localhost", true], ["", true]
]

describe("PrivateAddress.isPrivate", () => {
  it("refuses every non-public address, in every form", () => {
    for (const [address, refused] of CASES) assert.strictEqual(isPrivate(address), refused, address)
  })
})
