/**
 * The real socket factory: Baileys' `makeWASocket`, configured for a gateway device (not shown as
 * online, so the phone keeps notifying its owner; no history import; events of its own sends not
 * echoed back), and Baileys' media download with re-upload of expired files.
 *
 * @since 1.0.0
 */
import makeWASocket, { downloadMediaMessage, type WASocket } from "@whiskeysockets/baileys"
import * as Layer from "effect/Layer"
import { type BaileysSocket, SocketFactory, type SocketFactoryService, type SocketOptions } from "./BaileysSocket.js"

const created = new WeakMap<BaileysSocket, { readonly socket: WASocket; readonly options: SocketOptions }>()

/** @since 1.0.0 */
export const makeSocket = (options: SocketOptions): WASocket =>
  makeWASocket({
    auth: options.auth,
    logger: options.logger,
    waWebSocketUrl: options.webSocketUrl,
    ...(options.version === null ? {} : { version: [...options.version] }),
    browser: [options.deviceName, "Chrome", "14.4.1"],
    markOnlineOnConnect: false,
    emitOwnEvents: false,
    syncFullHistory: false,
    // The gateway records what happens from the moment it is linked; importing the phone's
    // past would replay old conversations as new messages and webhooks.
    shouldSyncHistoryMessage: () => false,
    fireInitQueries: true,
    cachedGroupMetadata: options.cachedGroupMetadata
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
      "buffer",
      {},
      real === undefined ? undefined : { logger: real.options.logger, reuploadRequest: real.socket.updateMediaMessage }
    )
  }
}

/** @since 1.0.0 */
export const layer: Layer.Layer<SocketFactory> = Layer.succeed(SocketFactory, factory)
