#pragma once
// The optional bearer token of the daemon's HTTP endpoints.
#include <string_view>

namespace gpureap::exporter {

// True when `authorization` (the Authorization header) is "Bearer <token>" with exactly this
// token. Compares in time independent of where the texts differ, so the token cannot be
// guessed byte by byte from response times.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace gpureap::exporter
