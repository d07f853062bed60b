import type { Option, Redacted } from "effect"

/** Values an override replaces whole: lists, optional values, secrets, and anything that is not a plain object. */
type Whole =
  | ReadonlyArray<unknown>
  | Option.Option<unknown>
  | Redacted.Redacted<unknown>
  | ((...args: never) => unknown)

/** Any part of `T`, at any depth: the nested values to change, and nothing else. */
export type DeepPartial<T> = T extends Whole
  ? T
  : T extends object
    ? { readonly [K in keyof T]?: DeepPartial<T[K]> }
    : T

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> => {
  if (typeof value !== "object" || value === null) return false
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/**
 * `base` with `overrides` laid over it: plain objects merge key by key, at any depth; everything
 * else (arrays, `Option`s, `Redacted`s, numbers…) in `overrides` replaces the value in `base`.
 */
export const deepMerge = <T>(base: T, overrides: NoInfer<DeepPartial<T>>): T => {
  if (!isPlainObject(base) || !isPlainObject(overrides)) return overrides as T
  const merged: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) merged[key] = deepMerge(base[key], value)
  }
  return merged as T
}
