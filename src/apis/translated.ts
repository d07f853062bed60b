import type { ChatTranslation } from "../providers/Provider.ts"
import type { TranslatedAnswer } from "../upstream/UpstreamReply.ts"
import type { Outbound, Translated } from "./ApiAdapter.ts"
import { messagesOutbound } from "./messages.ts"

/** The outbound of each API a provider's translation writes (its body's shape: where the context goes). */
const outbounds: Readonly<
  Record<ChatTranslation["api"], (body: Readonly<Record<string, unknown>>, translated: Translated) => Outbound>
> = { messages: messagesOutbound }

/** A body translated into the provider's API, on its way there; the answer comes back as `answer` encodes it. */
export const translatedOutbound = (
  translation: ChatTranslation,
  body: Readonly<Record<string, unknown>>,
  answer: TranslatedAnswer
): Outbound => outbounds[translation.api](body, { translation, answer })
