#pragma once
// Evidence not every reader may see: lines read from files only root can read (the log of
// a WorkServer's daemon, mode 0600). A finding keeps them apart
// (Finding::restricted_evidence) and each view decides, for the reader it answers, whether they
// join the evidence: `gpureap doctor` read the files itself, so its user could; the daemon gives
// them to root (or its own user) on its local socket and to an HTTP client that sent its bearer
// token, never to an unauthenticated HTTP client, which any local user can be. A view that does
// not decide (alerts, top) shows none.
#include <vector>

#include "doctor/finding.h"

namespace gpureap::doctor {

enum class Reader {
  Privileged,  // could read the files the lines came from
  Anyone,      // could be any local user
};

// Makes each finding's restricted lines evidence for a privileged reader; for anyone else
// drops them and says in one line of evidence how many there were and who can see them.
void show_restricted_evidence(std::vector<Finding>& findings, Reader reader);

}  // namespace gpureap::doctor
