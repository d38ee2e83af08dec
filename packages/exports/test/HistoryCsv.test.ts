import { assert, describe, it } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import * as HistoryCsv from "../src/HistoryCsv.js"
import type { CsvRow } from "../src/HistoryCsv.js"

const row = (text: string, extra: { readonly error?: string | null; readonly number_phone?: string | null } = {}): CsvRow => [
  "7",
  "2026-11-21T10:00:00.000Z",
  "3",
  extra.number_phone === undefined ? "77010000001" : extra.number_phone,
  "in",
  "network",
  "77010000002",
  "77010000002@c.us",
  "text",
  text,
  "received",
  "WA1",
  extra.error ?? null
]

describe("HistoryCsv", () => {
  it("neutralizes what a spreadsheet would run as a formula, and nothing else", () => {
    const cases: Array<[string, string]> = [
      ["=1+1", "'=1+1"],
      ["+77011234567", "'+77011234567"],
      ["-5", "'-5"],
      ["@SUM(A1)", "'@SUM(A1)"],
      ["a=b", "a=b"],
      [" =1", " =1"],
      ["", ""],
      ["'quoted", "'quoted"]
    ]
    for (const [text, expected] of cases) assert.strictEqual(HistoryCsv.neutralizeFormula(text), expected, text)
  })

  it("writes a formula's text behind an apostrophe in the record, and only the text", () => {
    const [, record] = parse(HistoryCsv.header + HistoryCsv.records([row("=1+1", { error: "-x" })]))
    assert.strictEqual(record[9], "'=1+1")
    assert.strictEqual(record[12], "-x")
  })

  it("quotes commas, quotes and every kind of line break; reads back unchanged", () => {
    const texts = ["a,b", "say \"hi\"", "one\ntwo", "one\rtwo", "one\r\ntwo", "plain", "ünïcödé 👋"]
    const csv = HistoryCsv.header + HistoryCsv.records(texts.map((t) => row(t)))
    const records: Array<Array<string>> = parse(csv)
    assert.deepStrictEqual(records[0], [...HistoryCsv.COLUMNS])
    assert.deepStrictEqual(records.slice(1).map((r) => r[9]), texts)
    assert.isTrue(csv.includes("\"one\ntwo\""))
    assert.isTrue(csv.includes("\"one\rtwo\""))
    assert.isTrue(csv.endsWith("\r\n"))
  })

  it("writes nulls as empty fields and times as ISO 8601 UTC", () => {
    const [, record] = parse(HistoryCsv.header + HistoryCsv.records([row("x", { error: null, number_phone: null })]))
    assert.deepStrictEqual(record, [
      "7", "2026-11-21T10:00:00.000Z", "3", "", "in", "network", "77010000002", "77010000002@c.us", "text", "x",
      "received", "WA1", ""
    ])
  })
})
