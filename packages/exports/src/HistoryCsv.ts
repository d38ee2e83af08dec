/**
 * The CSV of GET /export and of archives: UTF-8, the spec's columns in order, RFC 4180 quoting
 * (CRLF between records; a field with a comma, a quote or a line break quoted), written by
 * `csv-stringify`. A text that a spreadsheet would run as a formula gets a leading apostrophe.
 *
 * @since 1.0.0
 */
import { stringify } from "csv-stringify/sync"
import type { CsvRow } from "./HistoryRows.js"

/** The columns, in the spec's order. @since 1.0.0 */
export const COLUMNS = [
  "id",
  "created_at",
  "number_id",
  "number_phone",
  "direction",
  "source",
  "peer_phone",
  "chat_id",
  "type",
  "text",
  "status",
  "wa_message_id",
  "error"
] as const

const FORMULA_START = /^[=+\-@]/

/**
 * A text a spreadsheet would read as a formula (it starts with `=`, `+`, `-` or `@`) behind an
 * apostrophe, which spreadsheets show as text and do not evaluate.
 *
 * @since 1.0.0
 */
export const neutralizeFormula = (text: string): string => (FORMULA_START.test(text) ? `'${text}` : text)

const OPTIONS = {
  record_delimiter: "windows",
  // csv-stringify quotes a field holding its record delimiter (CRLF) but not a lone CR or LF:
  // RFC 4180 wants every field with a line break quoted.
  quoted_match: /[\r\n]/
} as const

/** The header record. @since 1.0.0 */
export const header: string = stringify([[...COLUMNS]], OPTIONS)

/** One record per row, in the order of `COLUMNS`. @since 1.0.0 */
export const record = (row: CsvRow): Array<string | null> => [
  row.id,
  row.created_at,
  row.number_id,
  row.number_phone,
  row.direction,
  row.source,
  row.peer,
  row.chat_id,
  row.type,
  neutralizeFormula(row.text),
  row.status,
  row.wa_message_id,
  row.error
]

/** The records of a batch of rows, as CSV text. @since 1.0.0 */
export const records = (rows: ReadonlyArray<CsvRow>): string =>
  rows.length === 0 ? "" : stringify(rows.map(record), OPTIONS)
