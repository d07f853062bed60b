import { Migrator } from "effect/sql"
import { migration as m0001 } from "./migrations/0001_profiles_traits_memories_messages.ts"
import { migration as m0002 } from "./migrations/0002_turns_and_extraction_jobs.ts"
import { migration as m0003 } from "./migrations/0003_extraction_worker_history_decay.ts"
import { migration as m0004 } from "./migrations/0004_plugin_value_types.ts"
import { migration as m0005 } from "./migrations/0005_profile_change_notifications.ts"
import { migration as m0006 } from "./migrations/0006_retrieval_vectors_supersede_time.ts"
import { migration as m0007 } from "./migrations/0007_extraction_budget.ts"
import { migration as m0008 } from "./migrations/0008_job_notifications_name_kinds.ts"
import { migration as m0009 } from "./migrations/0009_cues_written_in_the_background.ts"
import { migration as m0010 } from "./migrations/0010_namespaces.ts"
import { migration as m0011 } from "./migrations/0011_api_keys.ts"
import { migration as m0012 } from "./migrations/0012_memory_tags_metadata.ts"
import { migration as m0013 } from "./migrations/0013_webhooks.ts"
import { migration as m0014 } from "./migrations/0014_stored_responses.ts"
import { migration as m0015 } from "./migrations/0015_conversations.ts"
import { migration as m0016 } from "./migrations/0016_threads.ts"
import { migration as m0017 } from "./migrations/0017_thread_summaries.ts"
import { migration as m0018 } from "./migrations/0018_answer_ids.ts"
import { migration as m0019 } from "./migrations/0019_state_per_profile.ts"
import { migration as m0020 } from "./migrations/0020_api_key_creators.ts"
import { migration as m0022 } from "./migrations/0022_job_key.ts"
import { migration as m0023 } from "./migrations/0023_context_blocks.ts"
import { migration as m0024 } from "./migrations/0024_context_forgetting.ts"
import { migration as m0025 } from "./migrations/0025_state_as_sent.ts"
import { migration as m0026 } from "./migrations/0026_usage.ts"
import { migration as m0027 } from "./migrations/0027_budgets.ts"
import { migration as m0028 } from "./migrations/0028_incomplete_turns.ts"
import { migration as m0029 } from "./migrations/0029_per_app_memory.ts"
import { migration as m0030 } from "./migrations/0030_shared_profile_notifications.ts"

/**
 * Schema migrations, one file each in `migrations/` (named as they are recorded in the database),
 * in code so the service needs no files at run time. They run at every start (already-applied ones
 * are skipped; concurrent replicas serialise on the migrations table lock). A landed migration is
 * never edited: a change is a new file, added here.
 */
export const migrations = Migrator.fromRecord({
  "0001_profiles_traits_memories_messages": m0001,
  "0002_turns_and_extraction_jobs": m0002,
  "0003_extraction_worker_history_decay": m0003,
  "0004_plugin_value_types": m0004,
  "0005_profile_change_notifications": m0005,
  "0006_retrieval_vectors_supersede_time": m0006,
  "0007_extraction_budget": m0007,
  "0008_job_notifications_name_kinds": m0008,
  "0009_cues_written_in_the_background": m0009,
  "0010_namespaces": m0010,
  "0011_api_keys": m0011,
  "0012_memory_tags_metadata": m0012,
  "0013_webhooks": m0013,
  "0014_stored_responses": m0014,
  "0015_conversations": m0015,
  "0016_threads": m0016,
  "0017_thread_summaries": m0017,
  "0018_answer_ids": m0018,
  "0019_state_per_profile": m0019,
  "0020_api_key_creators": m0020,
  "0022_job_key": m0022,
  "0023_context_blocks": m0023,
  "0024_context_forgetting": m0024,
  "0025_state_as_sent": m0025,
  "0026_usage": m0026,
  "0027_budgets": m0027,
  "0028_incomplete_turns": m0028,
  "0029_per_app_memory": m0029,
  "0030_shared_profile_notifications": m0030
})

export const runMigrations = Migrator.make({})({ loader: migrations })
