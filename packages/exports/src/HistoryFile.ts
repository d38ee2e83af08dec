/**
 * The history as a file, CSV or JSON, produced batch by batch from a stream of rows: memory
 * holds one batch whatever the history's size.
 *
 * @since 1.0.0
 */
import * as Chunk from "effect/Chunk"
import * as Stream from "effect/Stream"
import * as HistoryCsv from "./HistoryCsv.js"
import { type CsvBatch, type HistoryRow, toExportedMessage } from "./HistoryRows.js"

const encoder = new TextEncoder()

/** @since 1.0.0 */
export type Format = "csv" | "json"

/** GET /export holds at most this many messages, the oldest. @since 1.0.0 */
export const MAX_MESSAGES = 100_000

/** @since 1.0.0 */
export const contentType = (format: Format) => format === "csv" ? "text/csv; charset=utf-8" : "application/json"

/** The header record, then the records of each batch. @since 1.0.0 */
export const csv = <E, R>(batches: Stream.Stream<CsvBatch, E, R>): Stream.Stream<Uint8Array, E, R> =>
  Stream.concat(Stream.succeed(encoder.encode(HistoryCsv.header)), Stream.map(batches, (batch) => batch.bytes))

/**
 * `{"messages":[...],"count":n}`: the count comes last, once every message has been written, so
 * nothing has to be counted beforehand.
 *
 * @since 1.0.0
 */
export const json = <E, R>(rows: Stream.Stream<HistoryRow, E, R>): Stream.Stream<Uint8Array, E, R> =>
  Stream.suspend(() => {
    let count = 0
    return Stream.succeed(encoder.encode("{\"messages\":[")).pipe(
      Stream.concat(Stream.mapChunks(rows, (chunk) => {
        if (chunk.length === 0) return Chunk.empty()
        let text = ""
        for (const row of chunk) {
          text += (count++ === 0 ? "" : ",") + JSON.stringify(toExportedMessage(row))
        }
        return Chunk.of(encoder.encode(text))
      })),
      Stream.concat(Stream.sync(() => encoder.encode(`],"count":${count}}`)))
    )
  })

