import { Option } from "effect"

/** `{ [name]: value }` for a flag that was given, `{}` for one that was not: spread into a request. */
export const optionalField = <K extends string, A>(name: K, value: Option.Option<A>): { [P in K]?: A } =>
  Option.match(value, { onNone: () => ({}), onSome: (given) => ({ [name]: given }) as { [P in K]?: A } })
