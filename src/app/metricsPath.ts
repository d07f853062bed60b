/** Where Prometheus scrapes the gateway (`MetricsRoutes`). */
export const METRICS_PATH = "/metrics"
