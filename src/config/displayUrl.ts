/** A URL as logs and reports may show it: scheme, host and path; never credentials, a query or a fragment. */
export const displayUrl = (url: string): string => {
  if (!URL.canParse(url)) return "(an invalid URL)"
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}${parsed.pathname === "/" ? "" : parsed.pathname}`
}

/** Text with every URL in it shown as `displayUrl` shows one. */
export const withDisplayUrls = (text: string): string => text.replace(/\bhttps?:\/\/[^\s)"']+/g, displayUrl)
