/**
 * The real socket factory: Baileys' `makeWASocket`, configured for a gateway device (not shown as
 * online, so the phone keeps notifying its owner; events of its own sends not echoed back; the
 * initial history sync that carries LID mappings and trusted-contact tokens, but not the full
 * history nor on-demand history; status broadcasts and channels ignored before decryption), and
 * Baileys' media download with re-upload of expired files.
 *
 * @since 1.0.0
 */
import makeWASocket, {
  downloadMediaMessage,
  fetchLatestWaWebVersion,
  isJidBroadcast,
  isJidNewsletter,
  proto,
  type WASocket
} from "@whiskeysockets/baileys"
import * as Layer from "effect/Layer"
import { type BaileysSocket, SocketFactory, type SocketFactoryService, type SocketOptions } from "./BaileysSocket.js"

const created = new WeakMap<BaileysSocket, { readonly socket: WASocket; readonly options: SocketOptions }>()

/**
 * Which history syncs Baileys processes: the initial ones (they carry the LID-to-phone mappings
 * and the trusted-contact tokens without which sends to existing contacts get 463), not the full
 * history nor on-demand history. History messages reach only `messaging-history.set`, never
 * `messages.upsert`, so nothing old is replayed as a new message.
 *
 * @since 1.0.0
 */
export const shouldSyncHistoryMessage = ({ syncType }: proto.Message.IHistorySyncNotification): boolean =>
  syncType !== proto.Message.HistorySyncType.FULL && syncType !== proto.Message.HistorySyncType.ON_DEMAND

/** Status broadcasts, broadcast lists and channels: refused before Baileys decrypts them. @since 1.0.0 */
export const shouldIgnoreJid = (jid: string): boolean => isJidBroadcast(jid) === true || isJidNewsletter(jid) === true

/** @since 1.0.0 */
export const makeSocket = (options: SocketOptions): WASocket =>
  makeWASocket({
    auth: options.auth,
    logger: options.logger,
    waWebSocketUrl: options.webSocketUrl,
    ...(options.version === null ? {} : { version: [...options.version] }),
    browser: [...options.browser],
    markOnlineOnConnect: false,
    emitOwnEvents: false,
    syncFullHistory: false,
    shouldSyncHistoryMessage,
    shouldIgnoreJid,
    fireInitQueries: true,
    cachedGroupMetadata: options.cachedGroupMetadata,
    getMessage: options.getMessage,
    msgRetryCounterCache: options.msgRetryCounterCache
  })

/** @since 1.0.0 */
export const factory: SocketFactoryService = {
  make: (options) => {
    const socket = makeSocket(options)
    created.set(socket, { socket, options })
    return socket
  },
  download: async (socket, message) => {
    const real = created.get(socket)
    return downloadMediaMessage(
      message,
      "stream",
      {},
      real === undefined ? undefined : { logger: real.options.logger, reuploadRequest: real.socket.updateMediaMessage }
    )
  },
  latestVersion: (signal) => fetchLatestWaWebVersion({ signal })
}

/** @since 1.0.0 */
export const layer: Layer.Layer<SocketFactory> = Layer.succeed(SocketFactory, factory)
