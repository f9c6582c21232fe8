// SessionOptions::images_per_run: a CPU session that runs its batch a few images at a time
// through one arena (split_batch_session.cpp). Session::create and Session::plan call these
// when the option asks for fewer images per run than the batch holds.
#pragma once

#include <memory>

#include "engine/src/session_impl.h"

namespace winfer {

// The option's own checks: >= 0, and the CPU only.
Status check_images_per_run(const SessionOptions& options);
// True when a session for input shape `whole` runs its batch in several runs.
bool splits_batch(const SessionOptions& options, const Shape& whole);
// The session (and its memory plan) for input shape `whole` (splits_batch true): the CPU
// session of images_per_run images, and one for the rest of the batch when it is not a
// multiple, sharing one arena.
Result<std::unique_ptr<SessionImpl>> create_split_batch_session(std::shared_ptr<const Model> model,
                                                                const SessionOptions& options, const Shape& whole);
Result<MemoryReport> plan_split_batch_session(std::shared_ptr<const Model> model, const SessionOptions& options,
                                              const Shape& whole);

}  // namespace winfer
