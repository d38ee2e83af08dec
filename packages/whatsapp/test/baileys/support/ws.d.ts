/** The part of `ws` (which ships no types of its own) that the handshake test uses. */
declare module "ws" {
  import type { EventEmitter } from "node:events"
  import type { IncomingMessage } from "node:http"

  export class WebSocket extends EventEmitter {
    terminate(): void
    once(event: "message", listener: (data: Buffer) => void): this
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: { readonly host?: string; readonly port?: number }, callback?: () => void)
    readonly clients: Set<WebSocket>
    address(): { readonly port: number } | string
    close(callback?: () => void): void
    on(event: "connection", listener: (socket: WebSocket, request: IncomingMessage) => void): this
  }
}
