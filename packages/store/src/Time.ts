/**
 * Row values as the API writes them.
 *
 * @since 1.0.0
 */

/** ISO 8601 UTC with milliseconds. @since 1.0.0 */
export const iso = (d: Date): string => d.toISOString()

/** @since 1.0.0 */
export const isoOrNull = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null)
