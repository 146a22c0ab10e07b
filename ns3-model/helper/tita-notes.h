// What the scenario helpers tell the user while they set a run up ("tita-sim:
// 56 Poisson flows, ...", "tita-sim: fault down on link 3 ..."): one line per
// Line(), prefixed with the program's name, on stderr for the runners and
// nowhere for tests. Not ns-3 logging: these lines are part of a runner's output.
#pragma once

#include <ostream>
#include <string>

namespace ns3
{

/**
 * \ingroup tita
 *   notes.Line() << flows.size() << " Poisson flows\n";
 */
class TitaNotes
{
  public:
    /// Lines go to `out` (nothing when null), each after "prefix: ".
    explicit TitaNotes(std::ostream* out = nullptr, std::string prefix = "")
        : m_out(out),
          m_prefix(std::move(prefix))
    {
    }

    /// The stream, after the prefix; the caller ends the line with '\n'.
    std::ostream& Line()
    {
        if (m_out == nullptr)
        {
            return m_null;
        }
        return *m_out << m_prefix << ": ";
    }
    /// The stream without the prefix (progress lines).
    std::ostream& Raw() { return m_out == nullptr ? m_null : *m_out; }
    const std::string& GetPrefix() const { return m_prefix; }

  private:
    std::ostream* m_out;
    std::string m_prefix;
    std::ostream m_null{nullptr}; // no buffer: every write is dropped
};

} // namespace ns3
