// A first-in first-out queue that holds no memory until something is pushed:
// a ring that grows (doubling, from 8) as it fills. The NIC's nine egress
// queues and every port's control queue are one each, and std::deque takes
// a node and a map (about 600 bytes) for an empty queue: 6 KB a NIC, 24 MB of
// a 4,096-GPU cluster before any traffic.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ns3
{

template <class T>
class TitaFifo
{
  public:
    bool empty() const { return m_count == 0; }
    uint32_t size() const { return m_count; }
    T& front() { return m_ring[m_head]; }

    void push_back(T v)
    {
        if (m_count == m_ring.size())
        {
            Grow();
        }
        m_ring[(m_head + m_count) & (m_ring.size() - 1)] = std::move(v);
        ++m_count;
    }

    void pop_front()
    {
        m_ring[m_head] = T{};
        m_head = (m_head + 1) & static_cast<uint32_t>(m_ring.size() - 1);
        --m_count;
    }

    /// Empties the queue and gives its memory back.
    void clear()
    {
        std::vector<T>().swap(m_ring);
        m_head = m_count = 0;
    }

  private:
    void Grow()
    {
        std::vector<T> bigger(m_ring.empty() ? 8 : 2 * m_ring.size());
        for (uint32_t i = 0; i < m_count; ++i)
        {
            bigger[i] = std::move(m_ring[(m_head + i) & (m_ring.size() - 1)]);
        }
        m_ring = std::move(bigger);
        m_head = 0;
    }

    std::vector<T> m_ring; // a power of two, or empty
    uint32_t m_head = 0;
    uint32_t m_count = 0;
};

} // namespace ns3
