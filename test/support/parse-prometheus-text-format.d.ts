declare module "parse-prometheus-text-format" {
  export interface Sample {
    readonly value?: string
    readonly labels?: Record<string, string>
    readonly buckets?: Record<string, string>
    readonly quantiles?: Record<string, string>
    readonly count?: string
    readonly sum?: string
  }
  export interface Family {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<Sample>
  }
  const parse: (text: string) => ReadonlyArray<Family>
  export default parse
}
