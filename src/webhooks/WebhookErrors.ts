import { Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"

export class WebhookNotFound
  extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", { id: Schema.String })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "webhook_not_found", `No webhook with id '${this.id}'`)
  }
}

export class DeliveryNotFound
  extends Schema.TaggedError<DeliveryNotFound>()("DeliveryNotFound", { id: Schema.String })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "delivery_not_found", `No delivery with id '${this.id}' for this webhook`)
  }
}

/** Replaying a delivery that has not finished: it will be (re)tried anyway. */
export class DeliveryNotFinished
  extends Schema.TaggedError<DeliveryNotFinished>()("DeliveryNotFinished", {
    id: Schema.String,
    status: Schema.String
  })
  implements ClientFacing<409>
{
  get clientError() {
    return clientError(
      409,
      "delivery_not_finished",
      `Delivery '${this.id}' is ${this.status}: only a delivered or failed one can be replayed`
    )
  }
}

/** A webhook a caller may not create: for another namespace, or with a URL it may not call. */
export class WebhookRefused
  extends Schema.TaggedError<WebhookRefused>()("WebhookRefused", {
    status: Schema.Literals([400, 403]),
    code: Schema.String,
    message: Schema.String,
    param: Schema.String
  })
  implements ClientFacing<400 | 403>
{
  get clientError() {
    return clientError(this.status, this.code, this.message, { param: this.param })
  }
}

/**
 * A sending that did not get a 2xx answer; `message` is what operators see in `lastError` (and a test
 * event's caller in `error`), `status` the receiver's answer when it gave one, `durationMs` how long it took.
 */
export class DeliveryFailed extends Schema.TaggedError<DeliveryFailed>()("DeliveryFailed", {
  message: Schema.String,
  status: Schema.NullOr(Schema.Int),
  durationMs: Schema.Int
}) {}
