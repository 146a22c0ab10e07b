// The ns-3 TestRunner for tita's suites: `tita-ns3-tests --suite=tita`
// (QUICK cases by default through meson test; --fullness=EXTENSIVE for all).
#include "ns3/nstime.h"
#include "ns3/test.h"

int
main(int argc, char** argv)
{
    // Picosecond resolution: frame times at 100-400 Gb/s are not whole nanoseconds.
    ns3::Time::SetResolution(ns3::Time::PS);
    return ns3::TestRunner::Run(argc, argv);
}
