import { profilePath } from "../../api.ts"

export const traitPath = (profileId: string, key: string) =>
  `${profilePath(profileId)}/traits/${encodeURIComponent(key)}`
