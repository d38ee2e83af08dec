/**
 * The readable transcript of one chat in an archive: a heading, then one line per message with
 * its Almaty time, who wrote it and what it said.
 *
 * @since 1.0.0
 */
import type { HistoryRow } from "./HistoryRows.js"

const ALMATY_OFFSET_MS = 5 * 3_600_000

/** `2026-11-21 19:03:05` in Almaty time, of an ISO 8601 time. @since 1.0.0 */
export const almatyTime = (iso: string): string =>
  new Date(Date.parse(iso) + ALMATY_OFFSET_MS).toISOString().slice(0, 19).replace("T", " ")

/** The first lines of a chat's transcript. @since 1.0.0 */
export const heading = (chat: { readonly chatId: string; readonly numberPhone: string | null }): string =>
  `Chat ${chat.chatId} of +${chat.numberPhone ?? "?"}\nTimes are Almaty time (UTC+5).\n\n`

/** One message as a line (continuation lines of a multi-line text are indented). @since 1.0.0 */
export const line = (row: HistoryRow): string => {
  const who = row.direction === "out"
    ? `+${row.number_phone ?? "?"} (us)`
    : `${row.name ? `${row.name} ` : ""}+${row.author ?? row.peer}`
  const media = row.type === "text" ? "" : `[${row.type}${row.media === null ? "" : `, file ${row.id}`}] `
  const failed = row.status === "failed" ? ` (not delivered${row.error ? `: ${row.error}` : ""})` : ""
  const text = row.text.replace(/\r\n?/g, "\n").replace(/\n/g, "\n    ")
  return `[${almatyTime(row.created_at)}] ${who}: ${media}${text}${failed}\n`
}

/** A file or folder name from free text: no separators, controls or dots at the start. @since 1.0.0 */
export const safeName = (raw: string, max = 80): string => {
  const cleaned = Array.from(raw.normalize("NFC"))
    .map((c) => (/[\u0000-\u001f\u007f/\\:*?"<>|]/.test(c) ? "_" : c))
    .join("")
    .replace(/^[.\s]+/, "")
    .trim()
  const cut = Array.from(cleaned).slice(0, max).join("")
  return cut === "" ? "file" : cut
}
