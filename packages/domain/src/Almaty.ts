/**
 * The service's calendar: days start at midnight in Almaty (UTC+5, no daylight saving).
 *
 * @since 1.0.0
 */

const OFFSET_MS = 5 * 60 * 60 * 1000
const DAY_MS = 24 * 60 * 60 * 1000

/** Start (epoch ms) of the Almaty day containing `epochMs`. @since 1.0.0 */
export const startOfDay = (epochMs: number): number => Math.floor((epochMs + OFFSET_MS) / DAY_MS) * DAY_MS - OFFSET_MS

/** Epoch ms of the next midnight in Almaty after `epochMs`. @since 1.0.0 */
export const nextMidnight = (epochMs: number): number => startOfDay(epochMs) + DAY_MS

/** The Almaty calendar date (YYYY-MM-DD) of `epochMs`. @since 1.0.0 */
export const dateOf = (epochMs: number): string => new Date(epochMs + OFFSET_MS).toISOString().slice(0, 10)

/** Epoch ms of midnight in Almaty at the start of a calendar date (YYYY-MM-DD). @since 1.0.0 */
export const midnightOf = (date: string): number => Date.parse(`${date}T00:00:00.000Z`) - OFFSET_MS

/** Whole seconds from `epochMs` until the next midnight in Almaty (at least 1). @since 1.0.0 */
export const secondsToMidnight = (epochMs: number): number => Math.max(1, Math.ceil((nextMidnight(epochMs) - epochMs) / 1000))

/** @since 1.0.0 */
export const DAY_MILLIS = DAY_MS
