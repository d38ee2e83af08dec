/**
 * GET /export (the history as a CSV or JSON download) and the archive exports: POST /exports
 * records one and hands it to its Export entity; GET /exports and GET /exports/{id} read the
 * records, each request with a fresh 15-minute link to a ready archive.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { WagateApi } from "@wagate/domain/Api"
import { ExportBusy, ExportLimit, NotFound, RateLimited, StorageUnavailable } from "@wagate/domain/ApiError"
import { CurrentKey, type Principal } from "@wagate/domain/Auth"
import type { CreateExportRequest } from "@wagate/domain/ArchiveExport"
import { ExportEntity } from "@wagate/entities/ExportEntity"
import { ExportRecords, type ExportRow, isExpired, toArchiveExport } from "@wagate/exports/ExportRecords"
import * as HistoryFile from "@wagate/exports/HistoryFile"
import { HistoryRows } from "@wagate/exports/HistoryRows"
import { BlobStore } from "@wagate/media/BlobStore"
import * as ContentDisposition from "@wagate/media/ContentDisposition"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { NumberScope } from "../NumberScope.js"
import { parseChat, parseRange } from "../Params.js"
import { retainedSince } from "./Retention.js"

/** A link to an archive is valid this long from the request that made it. */
const LINK_SECONDS = 15 * 60

const stamp = (now: number) => new Date(now).toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-")

export const HistoryHttp = HttpApiBuilder.group(WagateApi, "history", (handlers) =>
  Effect.gen(function*() {
    const history = yield* HistoryRows
    const records = yield* ExportRecords
    const scope = yield* NumberScope
    return handlers.handle("export", ({ urlParams }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentKey
        const number = yield* scope.reading(principal, urlParams.from)
        const { since, until } = yield* parseRange(urlParams)
        const format = urlParams.format ?? "csv"
        const now = yield* DomainClock.now
        const wait = yield* records.takeDownload(principal.accountId, now)
        if (Option.isSome(wait)) {
          // Retry-After 60, as the spec gives rate_limited on every endpoint but the send; the
          // sentence says the real wait.
          return yield* new RateLimited({
            error: `At most 10 history exports in 10 minutes per account; the next is allowed in ${wait.value} s`,
            retryAfter: 60
          })
        }
        const filter = {
          accountId: principal.accountId,
          numberId: number?.id ?? null,
          since,
          until,
          retainedSince: yield* retainedSince
        }
        const body = format === "csv"
          ? HistoryFile.csv(history.csv(filter, HistoryFile.MAX_MESSAGES))
          : HistoryFile.json(history.stream(filter, HistoryFile.MAX_MESSAGES))
        const filename = `wagate-history${number ? `-${number.phone}` : ""}-${stamp(now)}.${format}`
        // The stream is pulled as the client reads: a client that goes away interrupts it, and
        // with it the next query.
        return HttpServerResponse.stream(body, {
          contentType: HistoryFile.contentType(format),
          headers: { "content-disposition": ContentDisposition.format("attachment", filename) }
        })
      }))
  }))

/** Archive exports for a principal: the API's and the cabinet's (an account-wide principal). */
export const makeArchiveExports = Effect.gen(function*() {
  const records = yield* ExportRecords
  const scope = yield* NumberScope
  const blobs = yield* BlobStore
  const exportClient = yield* ExportEntity.client

  const present = (row: ExportRow, now: number) =>
    Effect.gen(function*() {
      if (row.status !== "done" || row.blob_key === null || isExpired(row, now)) {
        return toArchiveExport(row, now, null)
      }
      const url = yield* blobs.signedUrl(row.blob_key, {
        expiresInSeconds: LINK_SECONDS,
        disposition: "attachment",
        filename: `wagate-export-${row.id}.zip`
      }).pipe(Effect.mapError(() => new StorageUnavailable()))
      return toArchiveExport(row, now, url)
    })

  const list = (principal: Principal) =>
    Effect.gen(function*() {
      const now = yield* DomainClock.now
      const rows = yield* records.list(principal.accountId, principal.numberId)
      // A list carries no links: each one is made by GET /exports/{id}.
      return { exports: rows.map((row) => toArchiveExport(row, now, null)) }
    })

  const create = (principal: Principal, payload: typeof CreateExportRequest.Type) =>
    Effect.gen(function*() {
      const number = yield* scope.reading(principal, payload.from)
      const { since, until } = yield* parseRange(payload)
      const chat = payload.chat === undefined ? null : yield* parseChat(payload.chat)
      const health = yield* blobs.health
      if (health.status === "down") return yield* new StorageUnavailable()
      const now = yield* DomainClock.now
      const created = yield* records.create({
        accountId: principal.accountId,
        numberId: number?.id ?? null,
        keyNumberId: principal.numberId,
        chat,
        since: since ?? null,
        until: until ?? null,
        includeMedia: payload.include_media ?? true
      }, now)
      if (created._tag === "Refused") {
        return yield* created.refusal._tag === "Busy"
          ? new ExportBusy({ retryAfter: 60 })
          : new ExportLimit({ retryAfter: created.refusal.retryAfter })
      }
      const row = created.row
      // Stored before this answers; if the cluster cannot take it now, the export stays
      // queued and the exports' background job hands it over on its next pass.
      yield* exportClient(String(row.id)).Run({ exportId: row.id }, { discard: true }).pipe(
        Effect.timeout("5 seconds"),
        Effect.catchAllCause((cause) => Effect.logWarning(`export ${row.id} left for the background job`, cause))
      )
      return toArchiveExport(row, now, null)
    })

  const get = (principal: Principal, id: number) =>
    Effect.gen(function*() {
      const now = yield* DomainClock.now
      const found = yield* records.find(principal.accountId, principal.numberId, id)
      if (Option.isNone(found)) return yield* new NotFound({ error: "Export not found" })
      return yield* present(found.value, now)
    })

  return { list, create, get } as const
})

export const ArchiveExportsHttp = HttpApiBuilder.group(WagateApi, "exports", (handlers) =>
  Effect.gen(function*() {
    const exports = yield* makeArchiveExports
    return handlers
      .handle("list", () => Effect.flatMap(CurrentKey, exports.list))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentKey, (principal) => exports.create(principal, payload)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentKey, (principal) => exports.get(principal, path.id)))
  }))

export const ExportsHttp = Layer.mergeAll(HistoryHttp, ArchiveExportsHttp).pipe(
  Layer.provide([HistoryRows.Default, ExportRecords.Default])
)
