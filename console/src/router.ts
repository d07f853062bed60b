import { useEffect, useState } from "preact/hooks"

/** Where the console is: the part of the URL after `#`, so the gateway serves one page for all of them. */
export type Route =
  | { readonly page: "profiles" }
  /** `thread`: one thread opened on the profile's threads tab (`#/profiles/<id>/threads/<thread id>`). */
  | { readonly page: "profile"; readonly id: string; readonly tab?: string; readonly thread?: string }
  | { readonly page: "jobs" }
  | { readonly page: "keys" }
  | { readonly page: "webhooks" }
  | { readonly page: "overview" }
  | { readonly page: "usage" }
  | { readonly page: "settings" }

/** A segment of the address as it was encoded, or as typed when it is not valid percent-encoding. */
const decoded = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

export const parseRoute = (hash: string): Route => {
  const [page, id, tab, thread] = hash.replace(/^#\/?/, "").split("/")
  if (page === "profiles" && id !== undefined && id !== "") {
    return {
      page: "profile",
      id: decoded(id),
      ...(tab === undefined || tab === "" ? {} : { tab }),
      ...(thread === undefined || thread === "" ? {} : { thread: decoded(thread) })
    }
  }
  if (page === "jobs") return { page: "jobs" }
  if (page === "keys") return { page: "keys" }
  if (page === "webhooks") return { page: "webhooks" }
  if (page === "overview") return { page: "overview" }
  if (page === "usage") return { page: "usage" }
  if (page === "settings") return { page: "settings" }
  return { page: "profiles" }
}

export const href = (route: Route): string =>
  route.page === "profile"
    ? `#/profiles/${encodeURIComponent(route.id)}${route.tab === undefined ? "" : `/${route.tab}`}${
        route.tab === undefined || route.thread === undefined ? "" : `/${encodeURIComponent(route.thread)}`
      }`
    : `#/${route.page}`

export const useRoute = (): Route => {
  const [route, setRoute] = useState(() => parseRoute(location.hash))
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash))
    addEventListener("hashchange", changed)
    return () => removeEventListener("hashchange", changed)
  }, [])
  return route
}
