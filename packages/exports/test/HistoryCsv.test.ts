import { assert, describe, it } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import * as HistoryCsv from "../src/HistoryCsv.js"
import type { CsvRow } from "../src/HistoryRows.js"

const row = (text: string, extra: Partial<CsvRow> = {}): CsvRow => ({
  id: "7",
  number_id: "3",
  number_phone: "77010000001",
  direction: "in",
  source: "network",
  chat_id: "77010000002@c.us",
  peer: "77010000002",
  wa_message_id: "WA1",
  type: "text",
  text,
  status: "received",
  error: null,
  created_at: "2026-11-21T10:00:00.000Z",
  ...extra
})

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
