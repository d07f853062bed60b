import { type Config, ConfigProvider, type Context, Layer } from "effect"

/**
 * A configuration section's service with every value at its default: what a slice's `layerTest`
 * builds, so a test does not depend on the environment it happens to run in.
 */
export const layerDefaults = <I, S>(service: Context.Key<I, S>, section: Config.Config<S>) =>
  Layer.effect(service, section).pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))))
