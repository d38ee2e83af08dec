/**
 * What the export entities and their background job need from the gateway's configuration.
 *
 * @since 1.0.0
 */
import * as Context from "effect/Context"

/** @since 1.0.0 */
export class ExportSettings extends Context.Tag("@wagate/exports/ExportSettings")<ExportSettings, {
  /** Messages older than this many days are not exported (0: kept for ever). */
  readonly messageRetentionDays: number
  /** How often expired archives are deleted and unfinished exports are handed to their entity again. */
  readonly janitorIntervalMs: number
}>() {}

/** The retention boundary at `now`, or null when messages are kept for ever. @since 1.0.0 */
export const retainedSince = (days: number, now: number): Date | null =>
  days > 0 ? new Date(now - days * 86_400_000) : null
