// The configuration's dsm.region entries that no shared variable took during the run: most often
// a name misspelt, which would otherwise leave the variable under the default protocol unnoticed.
// Rank 0 places every region, so it alone keeps the record and warns at the end of the run.
#ifndef LMDX_API_INTERNAL_UNUSED_REGIONS_H_
#define LMDX_API_INTERNAL_UNUSED_REGIONS_H_

#include "config/config.h"

namespace lmdx::api {

// region decided the policy of a variable being placed (nullptr: no region matched).
void NoteRegionTaken(const config::RegionSettings* region);
// Logs one warning naming every region of settings that no variable took; once per run.
void WarnOfUnusedRegions(const config::Settings& settings);

}  // namespace lmdx::api

#endif  // LMDX_API_INTERNAL_UNUSED_REGIONS_H_
