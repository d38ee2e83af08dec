/**
 * The CSV of GET /export and of archives: UTF-8, the spec's columns in order with a header
 * record, RFC 4180 quoting (a field with a comma, a quote or a line break quoted, its quotes
 * doubled). PostgreSQL writes the records (`COPY ... (FORMAT csv)`, see HistoryRows), each ending
 * with a line feed; a text that a spreadsheet would run as a formula gets a leading apostrophe.
 *
 * @since 1.0.0
 */

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

/** The header record: the column names, which need no quoting. @since 1.0.0 */
export const header: string = `${COLUMNS.join(",")}\n`
