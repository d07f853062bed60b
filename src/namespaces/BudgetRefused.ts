import { Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"

/** A namespace budget the caller may not set: a name that is not one, another namespace, or (its own) not the global admin. */
export class BudgetRefused
  extends Schema.TaggedError<BudgetRefused>()("BudgetRefused", {
    status: Schema.Literals([400, 403]),
    code: Schema.String,
    message: Schema.String
  })
  implements ClientFacing<400 | 403>
{
  get clientError() {
    return clientError(this.status, this.code, this.message)
  }
}
