// dpqctl population list | show | create: the population's datasets and budget, as text for
// people and as JSON for programs.
#ifndef DPQ_CLIENT_DPQCTL_POPULATION_OUTPUT_H_
#define DPQ_CLIENT_DPQCTL_POPULATION_OUTPUT_H_

#include <ostream>

#include "dpq/v1/dpq.pb.h"
#include "nlohmann/json.hpp"

namespace dpqctl {

nlohmann::json PopulationToJson(const dpq::v1::Population& population);
nlohmann::json ListPopulationsResponseToJson(const dpq::v1::ListPopulationsResponse& response);
// The population, its datasets, then its budget table.
void WritePopulationText(std::ostream& out, const dpq::v1::Population& population);
// One aligned row per population: name, unit type, datasets, epsilon spent of total.
void WriteListPopulationsText(std::ostream& out, const dpq::v1::ListPopulationsResponse& response);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_POPULATION_OUTPUT_H_
