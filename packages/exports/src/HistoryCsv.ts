/**
 * The CSV of GET /export and of archives: UTF-8, the spec's columns in order, RFC 4180 quoting
 * (CRLF between records; a field with a comma, a quote or a line break quoted), written by
 * `csv-stringify`. A text that a spreadsheet would run as a formula gets a leading apostrophe.
 *
 * @since 1.0.0
 */
import { stringify } from "csv-stringify/sync"

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

/**
 * A message as the CSV's fields in the order of `COLUMNS`, every one already text (the time as
 * ISO 8601 UTC): the row exactly as PostgreSQL sends it in array mode, so no object is made per
 * message on the way to the file.
 *
 * @since 1.0.0
 */
export type CsvRow = readonly [
  id: string,
  created_at: string,
  number_id: string,
  number_phone: string | null,
  direction: string,
  source: string,
  peer_phone: string,
  chat_id: string,
  type: string,
  text: string,
  status: string,
  wa_message_id: string,
  error: string | null
]

const TEXT = 9

/** `=`, `+`, `-`, `@`. */
const startsFormula = (text: string): boolean => {
  const c = text.charCodeAt(0)
  return c === 61 || c === 43 || c === 45 || c === 64
}

/**
 * A text a spreadsheet would read as a formula (it starts with `=`, `+`, `-` or `@`) behind an
 * apostrophe, which spreadsheets show as text and do not evaluate.
 *
 * @since 1.0.0
 */
export const neutralizeFormula = (text: string): string => (startsFormula(text) ? `'${text}` : text)

const OPTIONS = {
  record_delimiter: "windows",
  // With a record delimiter of its own, csv-stringify quotes a field holding it (CRLF) but not a
  // lone CR or LF unless asked: RFC 4180 wants every field with a line break quoted.
  quote_record_delimiter: true
} as const

/** The header record. @since 1.0.0 */
export const header: string = stringify([[...COLUMNS]], OPTIONS)

/** The record of a row: the row itself, or a copy when its text must be neutralized. @since 1.0.0 */
export const record = (row: CsvRow): CsvRow => {
  if (!startsFormula(row[TEXT])) return row
  const [id, createdAt, numberId, phone, direction, source, peer, chat, type, text, status, waId, error] = row
  return [id, createdAt, numberId, phone, direction, source, peer, chat, type, `'${text}`, status, waId, error]
}

/** The records of a batch of rows, as CSV text. @since 1.0.0 */
export const records = (rows: ReadonlyArray<CsvRow>): string =>
  rows.length === 0 ? "" : stringify(rows.map(record), OPTIONS)
