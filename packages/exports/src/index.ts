/**
 * History export (CSV/JSON) and ZIP archive exports run by Export entities.
 *
 * @since 1.0.0
 */
export * as ArchiveBuilder from "./ArchiveBuilder.js"
export * as ExportJanitor from "./ExportJanitor.js"
export * as ExportLive from "./ExportLive.js"
export * as ExportRecords from "./ExportRecords.js"
export * as ExportSettings from "./ExportSettings.js"
export * as HistoryCsv from "./HistoryCsv.js"
export * as HistoryFile from "./HistoryFile.js"
export * as HistoryRows from "./HistoryRows.js"
export * as Transcript from "./Transcript.js"
