/**
 * The part of a Baileys socket the driver uses, and the factory that makes one. The live factory
 * is Baileys' `makeWASocket`; tests give a fake that emits Baileys' own event shapes, so every
 * mapping of the driver is exercised without reaching WhatsApp.
 *
 * @since 1.0.0
 */
import type { Readable } from "node:stream"
import type {
  AnyMessageContent,
  AuthenticationState,
  BaileysEventMap,
  BinaryNode,
  CacheStore,
  Contact,
  GroupMetadata,
  MiscMessageGenerationOptions,
  proto,
  SocketConfig,
  WAMessage,
  WAMessageKey
} from "@whiskeysockets/baileys"
import * as Context from "effect/Context"

/** Baileys' logger interface (pino's shape). @since 1.0.0 */
export type BaileysLogger = SocketConfig["logger"]

/** The events the driver listens to. @since 1.0.0 */
export interface SocketEvents {
  on<T extends keyof BaileysEventMap>(event: T, listener: (arg: BaileysEventMap[T]) => void): void
  off<T extends keyof BaileysEventMap>(event: T, listener: (arg: BaileysEventMap[T]) => void): void
  /** Whether Baileys holds events back (while it processes what arrived offline). */
  isBuffering?: () => boolean
}

/**
 * The WebSocket under the socket: every decoded frame is emitted as "frame", and again under
 * Baileys' callback names (`CB:ack,class:message`, `CB:iq,type:error`...).
 *
 * @since 1.0.0
 */
export interface SocketWire {
  on(event: string, listener: (frame: BinaryNode) => void): unknown
  off(event: string, listener: (frame: BinaryNode) => void): unknown
  readonly isOpen: boolean
}

/** What WhatsApp says about the account's reach-out restriction. @since 1.0.0 */
export interface ReachoutTimelock {
  readonly isActive?: boolean | undefined
  readonly timeEnforcementEnds?: Date | undefined
  readonly enforcementType?: string | undefined
}

/**
 * What the driver needs of `makeWASocket(...)`; Baileys' socket satisfies it as it is.
 *
 * @since 1.0.0
 */
export interface BaileysSocket {
  readonly ev: SocketEvents
  readonly ws: SocketWire
  readonly user: Contact | undefined
  readonly sendMessage: (
    jid: string,
    content: AnyMessageContent,
    options?: MiscMessageGenerationOptions
  ) => Promise<WAMessage | undefined>
  readonly requestPairingCode: (phoneNumber: string) => Promise<string>
  readonly onWhatsApp: (...phoneNumber: Array<string>) => Promise<Array<{ jid: string; exists: boolean }> | undefined>
  readonly groupMetadata: (jid: string) => Promise<GroupMetadata>
  readonly query: (node: BinaryNode, timeoutMs?: number) => Promise<unknown>
  readonly logout: (msg?: string) => Promise<void>
  readonly end: (error: Error | undefined) => Promise<void> | void
  /** Asks WhatsApp whether the account may reach out to new people (also emitted as `reachoutTimeLock`). */
  readonly fetchAccountReachoutTimelock: () => Promise<ReachoutTimelock>
  /** Every group the account is in, in one query. */
  readonly groupFetchAllParticipating: () => Promise<{ [jid: string]: GroupMetadata }>
}

/** What a socket is made with. @since 1.0.0 */
export interface SocketOptions {
  readonly auth: AuthenticationState
  readonly logger: BaileysLogger
  readonly webSocketUrl: string
  readonly version: readonly [number, number, number] | null
  /** Baileys' `browser`: [operating system or device name, browser, version]. */
  readonly browser: readonly [string, string, string]
  /** Group metadata the driver already knows, so Baileys does not ask again when sending. */
  readonly cachedGroupMetadata: (jid: string) => Promise<GroupMetadata | undefined>
  /** A message this number sent, for a recipient that asks for it again (retry receipt). */
  readonly getMessage: (key: WAMessageKey) => Promise<proto.IMessage | undefined>
  /** How often each message was re-sent on request; one per number, so it outlives sockets. */
  readonly msgRetryCounterCache: CacheStore
}

/** The current WhatsApp Web version, as Baileys' `fetchLatestWaWebVersion` answers. @since 1.0.0 */
export type LatestVersion = (signal: AbortSignal) => Promise<{
  readonly version: readonly [number, number, number]
  readonly isLatest: boolean
  readonly error?: unknown
}>

/** @since 1.0.0 */
export interface SocketFactoryService {
  /** A new socket; it starts connecting at once and reports through its events. */
  readonly make: (options: SocketOptions) => BaileysSocket
  /** The bytes of an incoming message's file (asking the phone to re-upload an expired one). */
  /** The file of `message` as it downloads and decrypts. */
  readonly download: (socket: BaileysSocket, message: WAMessage) => Promise<Readable>
  /** The current WhatsApp Web version (fetched from WhatsApp; never throws). */
  readonly latestVersion: LatestVersion
}

/** @since 1.0.0 */
export class SocketFactory extends Context.Tag("@wagate/whatsapp/baileys/SocketFactory")<
  SocketFactory,
  SocketFactoryService
>() {}
